/*
 * Contexts (protocol 15) and undo checkpoints (protocol 17), as
 * _sandboxd_agent.py keeps them. Besides its first worker, the context
 * "default", the supervisor keeps a worker for each context the daemon
 * names, each with globals of its own, started in its folder, or forked
 * from another's worker. An exec with "checkpoints": K > 0 of a Python cell
 * first parks a stopped copy of its context's worker (the newest K are
 * kept); an undo wakes the N-th newest as the context's worker. A reset of
 * one context's worker kills that worker's process group only while others
 * live (or copies are parked): the sandbox-wide kill would take them too.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "supervisor.h"

/* The worker of JavaScript cells that name no context, started at the
 * first one. */
#define JAVASCRIPT_DEFAULT "default-javascript"
#define NO_NODE "JavaScript needs node in the sandbox, and this template has none on its PATH"

struct worker *default_worker(struct agent *a)
{
	return &a->ctx[0].w;
}

static struct context *find(struct agent *a, const char *name)
{
	for (size_t i = 0; i < a->nctx; i++)
		if (strcmp(a->ctx[i].name, name) == 0)
			return &a->ctx[i];
	return NULL;
}

/* entry is name's context, made (without a worker) if there is none. */
static struct context *entry(struct agent *a, const char *name)
{
	struct context *c = find(a, name);
	if (c)
		return c;
	struct context *more = realloc(a->ctx, (a->nctx + 1) * sizeof *a->ctx);
	if (!more)
		abort();
	a->ctx = more;
	c = &a->ctx[a->nctx++];
	memset(c, 0, sizeof *c);
	c->name = strdup(name);
	worker_init(&c->w, NULL, NULL);
	return c;
}

/* agent_alone reports whether the default worker is the only one (no
 * other context's, no parked copy): a reset may then kill everything in
 * the sandbox. */
bool agent_alone(struct agent *a)
{
	for (size_t i = 0; i < a->nctx; i++)
		if ((i > 0 && a->ctx[i].has) || a->ctx[i].nparked > 0)
			return false;
	return true;
}

/* worker_pids are the workers' pids and their parked copies', which an
 * execution's stop spares (malloc'd). */
size_t worker_pids(struct agent *a, pid_t **pids)
{
	size_t n = 0, cap = 0;
	for (size_t i = 0; i < a->nctx; i++)
		cap += 1 + a->ctx[i].nparked;
	*pids = calloc(cap + 1, sizeof **pids);
	for (size_t i = 0; i < a->nctx; i++) {
		if (a->ctx[i].w.pid)
			(*pids)[n++] = a->ctx[i].w.pid;
		for (size_t j = 0; j < a->ctx[i].nparked; j++)
			if (a->ctx[i].parked[j].pid)
				(*pids)[n++] = a->ctx[i].parked[j].pid;
	}
	return n;
}

static void drop_parked(struct context *c)
{
	for (size_t j = 0; j < c->nparked; j++)
		worker_free(&c->parked[j]);
	free(c->parked);
	c->parked = NULL;
	c->nparked = 0;
}

/* checkpoint parks a copy of context c's worker as it is now (forked, then
 * stopped), keeping the newest keep of its copies; returns whether it did.
 * A copy that cannot be made is logged, and the execution runs without. */
static bool checkpoint(struct context *c, long long keep)
{
	struct worker *w = &c->w;
	if (keep <= 0 || w->node || !w->pid || worker_exited(w))
		return false; /* none asked; node does not fork; a dead worker has no state */
	struct worker copy;
	char why[256];
	if (worker_fork(w, NULL, &copy, why, sizeof why) < 0) {
		sbx_log("checkpoint of context '%s': %s", c->name, why);
		return false;
	}
	copy.cwd = w->cwd ? strdup(w->cwd) : NULL; /* where it starts afresh after a reset */
	if (kill(copy.pid, SIGSTOP) < 0) {
		sbx_log("checkpoint of context '%s': the copy is gone", c->name);
		worker_free(&copy);
		return false;
	}
	struct worker *more = realloc(c->parked, (c->nparked + 1) * sizeof *c->parked);
	if (!more)
		abort();
	c->parked = more;
	c->parked[c->nparked++] = copy;
	while ((long long)c->nparked > keep) {
		worker_free(&c->parked[0]);
		memmove(c->parked, c->parked + 1, (c->nparked - 1) * sizeof *c->parked);
		c->nparked--;
	}
	return true;
}

/* find_node is the template's node, found on the sandbox's PATH, or NULL. */
static char *find_node(void)
{
	const char *path = getenv("PATH");
	char *dirs = strdup(path ? path : "/usr/local/bin:/usr/bin:/bin"), *save = NULL;
	char *found = NULL;
	for (char *d = strtok_r(dirs, ":", &save); d && !found; d = strtok_r(NULL, ":", &save)) {
		char *p;
		if (asprintf(&p, "%s/node", *d ? d : ".") < 0)
			break;
		if (access(p, X_OK) == 0)
			found = p;
		else
			free(p);
	}
	free(dirs);
	return found;
}

/* start_context starts context name's worker, afresh if it has one: a new
 * interpreter (node's, for JavaScript), or a copy of context source's.
 * NULL, and why, if it cannot. */
static struct worker *running(struct agent *a, const char *name, char *why, size_t whylen);
static struct worker *start_context(struct agent *a, const char *name, const char *cwd, const char *source,
				    const char *language, char *why, size_t whylen)
{
	struct worker w;
	if (source) {
		struct worker *src = running(a, source, why, whylen);
		if (!src || worker_fork(src, cwd, &w, why, whylen) < 0)
			return NULL;
	} else if (strcmp(language, SBX_LANGUAGE_JAVASCRIPT) == 0) {
		char *node = find_node();
		if (!node) {
			snprintf(why, whylen, "%s", NO_NODE);
			return NULL;
		}
		worker_init(&w, cwd, node);
		free(node);
		worker_start(a, &w);
	} else {
		worker_init(&w, cwd, NULL);
		worker_start(a, &w);
	}
	struct context *c = entry(a, name);
	if (c->has || c == &a->ctx[0])
		worker_free(&c->w);
	drop_parked(c);
	c->w = w;
	c->has = true;
	if (!source && strcmp(language, SBX_LANGUAGE_PYTHON) == 0)
		agent_preload(a, &c->w);
	return &c->w;
}

/* running is context name's worker, started (empty) if this sandbox has
 * none or it has ended. */
static struct worker *running(struct agent *a, const char *name, char *why, size_t whylen)
{
	struct context *c = find(a, name);
	if (!c || !c->has)
		return start_context(a, name, "", NULL, SBX_LANGUAGE_PYTHON, why, whylen);
	if (worker_exited(&c->w)) {
		unwatch(c->w.pid);
		c->w.pid = 0;
		agent_restart(a, &c->w, false);
	}
	return &c->w;
}

static long long checkpoints_of(json_t *req)
{
	json_t *k = json_object_get(req, "checkpoints");
	if (!json_is_integer(k))
		return 0;
	long long v = json_integer_value(k);
	return v < 0 ? 0 : v > SBX_MAX_CHECKPOINTS ? SBX_MAX_CHECKPOINTS : v;
}

/* execute_cell runs a Python or JavaScript cell in its context's worker. */
json_t *execute_cell(struct agent *a, json_t *req, const char *language, const char *exec_id, double start)
{
	const char *name = str_of(req, "context", "");
	if (!*name)
		name = SBX_CONTEXT_DEFAULT;
	/* A context the daemon names and this sandbox (a new one) lacks has
	 * lost its state; the session's JavaScript interpreter, which starts
	 * at its first cell, has lost nothing. */
	bool lost = true;
	if (strcmp(language, SBX_LANGUAGE_JAVASCRIPT) == 0 && strcmp(name, SBX_CONTEXT_DEFAULT) == 0) {
		name = JAVASCRIPT_DEFAULT;
		lost = false;
	}
	struct context *c = find(a, name);
	bool started = !c || !c->has;
	struct worker *w = started ? NULL : &c->w;
	if (started) {
		char why[256];
		w = start_context(a, name, str_of(req, "context_cwd", ""), NULL, language, why, sizeof why);
		if (!w) {
			json_t *done = done_new();
			json_object_set_new(done, "status", json_string(SBX_STATUS_ERROR));
			json_object_set_new(done, "exit_code", json_integer(1));
			json_object_set_new(done, "error", json_pack("{s:s, s:s, s:s}", "name", "LanguageUnavailable", "value", why, "traceback", ""));
			return done;
		}
		c = find(a, name);
	}
	bool parked = checkpoint(c, checkpoints_of(req));
	json_t *done = cell_execute(a, &c->w, req, &a->d, exec_id, start);
	if (started && lost)
		json_object_set_new(done, "state_reset", json_true());
	if (parked)
		json_object_set_new(done, "checkpoint", json_true());
	return done;
}

static void send_context(struct agent *a, const char *name, pid_t pid)
{
	json_t *m = json_pack("{s:s, s:s, s:i}", "type", SBX_TYPE_CONTEXT, "context", name, "pid", (int)pid);
	daemon_send(&a->d, m);
	json_decref(m);
}

/* handle_context starts or deletes a context; the default one only
 * restarts. */
void handle_context(struct agent *a, json_t *req)
{
	const char *name = str_of(req, "context", "");
	const char *action = str_of(req, "action", "");
	if (!*name)
		name = SBX_CONTEXT_DEFAULT;
	char why[256];
	if (strcmp(name, SBX_CONTEXT_DEFAULT) == 0) {
		if (strcmp(action, "start") != 0) {
			daemon_error(&a->d, "the agent could not run this request: the default context cannot be deleted");
			return;
		}
		agent_restart(a, &a->ctx[0].w, false);
		/* After: the worker's end gives its copies to the supervisor,
		 * which then reaps them as it kills them. */
		drop_parked(&a->ctx[0]);
		send_context(a, name, a->ctx[0].w.pid);
	} else if (strcmp(action, "start") == 0) {
		const char *source = str_of(req, "from", "");
		const char *language = str_of(req, "language", "");
		struct worker *w = start_context(a, name, str_of(req, "cwd", ""), *source ? source : NULL,
						 *language ? language : SBX_LANGUAGE_PYTHON, why, sizeof why);
		if (!w) {
			daemon_error(&a->d, "the agent could not run this request: %s", why);
			return;
		}
		send_context(a, name, w->pid);
	} else if (strcmp(action, "delete") == 0) {
		struct context *c = find(a, name);
		if (c) {
			worker_free(&c->w);
			drop_parked(c);
			c->has = false;
		}
		send_context(a, name, 0);
	} else {
		daemon_error(&a->d, "the agent could not run this request: unknown context action '%s'", action);
	}
}

/* handle_undo puts back context C's worker as it was before its last N
 * executions that parked a copy: the N-th newest parked copy resumes as
 * C's worker; the current worker and the newer copies are killed. */
void handle_undo(struct agent *a, json_t *req)
{
	const char *name = str_of(req, "context", "");
	if (!*name)
		name = SBX_CONTEXT_DEFAULT;
	json_t *s = json_object_get(req, "steps");
	if (!json_is_integer(s) || json_integer_value(s) < 1) {
		daemon_error(&a->d, "the agent could not run this request: undo needs steps, a whole number from 1");
		return;
	}
	long long steps = json_integer_value(s);
	struct context *c = find(a, name);
	size_t kept = c ? c->nparked : 0;
	if ((long long)kept < steps) {
		daemon_error(&a->d, "context %s keeps %zu checkpoints", name, kept);
		return;
	}
	size_t at = kept - steps;
	struct worker target = c->parked[at];
	if (c->has || c == &a->ctx[0])
		worker_free(&c->w); /* its own group: the copies are sessions of their own */
	for (size_t j = at + 1; j < kept; j++)
		worker_free(&c->parked[j]);
	c->nparked = at;
	kill(target.pid, SIGCONT); /* if it has ended, the next execution finds it gone */
	c->w = target;
	c->has = true;
	json_t *m = json_pack("{s:s, s:s, s:I, s:i}", "type", SBX_TYPE_UNDONE, "context", name, "undone", (json_int_t)steps,
			      "pid", (int)target.pid);
	daemon_send(&a->d, m);
	json_decref(m);
}

/* reseed_all has every interpreter reseed its random generators before its
 * next cell (a copy restored from a checkpoint). */
void reseed_all(struct agent *a)
{
	for (size_t i = 0; i < a->nctx; i++) {
		a->ctx[i].w.reseed = true;
		for (size_t j = 0; j < a->ctx[i].nparked; j++)
			a->ctx[i].parked[j].reseed = true;
	}
}
