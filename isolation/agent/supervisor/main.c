/*
 * The entry: sandboxd-supervisor PYTHON DIR [PRELOAD], or --version (its
 * name and the agent's revision it was built for). PYTHON is the
 * interpreter the worker runs on, DIR the folder of the agent's modules
 * (the runtime's /etc/sandboxd), PRELOAD the template's preload code, run
 * in every new worker before its first cell (as the Python supervisor's
 * argv[1]).
 *
 * PID 1 ignores the signals it has no handler for, so user code (the same
 * uid) cannot stop it; it is not dumpable, so user code cannot read or
 * write its memory or take its descriptors. It answers the daemon's
 * requests one at a time (ping, exec of Python, JavaScript and shell,
 * interrupt, reclaim, context, undo, quiesce), and a thread of its own
 * serves the processes the daemon starts (spawn.c).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "supervisor.h"

#define SUPERVISOR_NAME "sandboxd-supervisor"

static void handle(struct agent *a, json_t *req)
{
	const char *op = str_of(req, "op", "");
	if (strcmp(op, SBX_OP_PING) == 0) {
		if (json_is_true(json_object_get(req, "ready"))) {
			/* Answer once the worker has finished starting (site,
			 * imports): a pooled sandbox is then fully warm. */
			json_t *noop = json_pack("{s:s, s:b, s:i}", "code", "", "noop", 1, "timeout", 60);
			json_decref(cell_execute(a, default_worker(a), noop, NULL, NULL, -1));
			json_decref(noop);
		}
		json_t *pong = json_pack("{s:s, s:i, s:i}", "type", SBX_TYPE_PONG, "pid", (int)getpid(), "protocol", SBX_PROTOCOL);
		if (a->undelivered)
			json_object_set(pong, "undelivered", a->undelivered);
		if (a->preload_error)
			json_object_set(pong, "preload_error", a->preload_error);
		daemon_send(&a->d, pong);
		json_decref(pong);
		if (a->d.conn >= 0 && a->undelivered) {
			json_decref(a->undelivered); /* handed over */
			a->undelivered = NULL;
		}
	} else if (strcmp(op, SBX_OP_EXEC) == 0) {
		double start = monotonic();
		const char *language = str_of(req, "language", "");
		if (!*language)
			language = SBX_LANGUAGE_PYTHON;
		const char *id = str_of(req, "id", "");
		json_t *done;
		if (strcmp(language, SBX_LANGUAGE_SHELL) == 0)
			done = shell_execute(a, req, id);
		else
			done = execute_cell(a, req, language, id, start);
		json_object_set_new(done, "type", json_string(SBX_TYPE_DONE));
		json_object_set_new(done, "id", json_string(id));
		json_object_set_new(done, "language", json_string(language));
		json_object_set_new(done, "duration_ms", json_real((monotonic() - start) * 1000.0));
		daemon_send(&a->d, done);
		if (a->d.conn < 0) {
			/* The daemon went away during the execution: keep how it
			 * ended for the next one, without the outputs it streamed. */
			json_object_del(done, "outputs");
			json_decref(a->undelivered);
			a->undelivered = json_incref(done);
		}
		json_decref(done);
		a->before = snapshot_take(a->before);
	} else if (strcmp(op, SBX_OP_CONTEXT) == 0) {
		handle_context(a, req);
		a->before = snapshot_take(a->before);
	} else if (strcmp(op, SBX_OP_UNDO) == 0) {
		handle_undo(a, req);
		a->before = snapshot_take(a->before);
	} else if (strcmp(op, SBX_OP_QUIESCE) == 0) {
		if (quiesce(a))
			reseed_all(a); /* a copy: its interpreters draw numbers of their own */
	} else if (strcmp(op, SBX_OP_INTERRUPT) == 0) {
		/* nothing runs: the execution it was for has ended */
	} else if (strcmp(op, SBX_OP_RECLAIM) == 0) {
		kill_largest(); /* a process left running holds the memory */
	} else {
		daemon_error(&a->d, "unknown op '%s'", op);
	}
}

/* serve answers each connection's requests until it hangs up, reaping
 * orphans meanwhile. */
static void serve(struct agent *a)
{
	for (;;) {
		struct pollfd p[2] = {{a->d.listener, POLLIN, 0}, {reaper_fd(), POLLIN, 0}};
		if (poll(p, 2, -1) < 0)
			continue;
		if (p[1].revents)
			reap_zombies();
		if (!p[0].revents || daemon_accept(&a->d) < 0)
			continue;
		while (a->d.conn >= 0) {
			char *line;
			size_t n;
			while (a->d.conn >= 0 && (line = linebuf_take(&a->d.rd, &n)) != NULL) {
				json_t *req = parse_line(line, n);
				free(line);
				if (!req) {
					daemon_error(&a->d, "bad request line");
					continue;
				}
				handle(a, req);
				json_decref(req);
			}
			if (a->d.conn < 0)
				break;
			struct pollfd q[2] = {{reaper_fd(), POLLIN, 0}, {a->d.conn, POLLIN, 0}};
			if (poll(q, 2, -1) < 0)
				continue;
			/* An exit first: a worker that died is restarted by the
			 * request that finds it gone. */
			if (q[0].revents)
				reap_zombies();
			if (q[1].revents && linebuf_fill(&a->d.rd, a->d.conn) <= 0)
				daemon_hang_up(&a->d);
		}
		reap_zombies();
	}
}

int main(int argc, char **argv)
{
	if (argc == 2 && strcmp(argv[1], "--version") == 0) {
		/* The daemon takes this supervisor only if it says the agent's
		 * revision the daemon was built with (the worker's modules are
		 * the daemon's). */
		printf("%s %d\n", SUPERVISOR_NAME, SBX_REVISION);
		return 0;
	}
	if (argc < 3 || argc > 4) {
		fprintf(stderr, "usage: %s PYTHON DIR [PRELOAD]\n", argv[0]);
		return 2;
	}
	if (strchr(argv[2], '\'') || strchr(argv[2], '\\')) {
		sbx_log("the agent's folder %s has a quote or a backslash", argv[2]);
		return 2;
	}
	/* PID 1 ignores signals it has no handler for; anywhere else (a test)
	 * SIGINT and SIGTERM end it, as they end the Python supervisor. */
	signal(SIGPIPE, SIG_IGN);
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0)
		sbx_log("prctl(PR_SET_DUMPABLE): %s", strerror(errno));
	/* Anywhere but PID 1 (a test), the orphans of a command it kills (a
	 * shell's children) are its to reap too, as in a sandbox. */
	if (getpid() != 1)
		prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
	reaper_start();
	struct agent a = {.python = argv[1], .dir = argv[2], .preload = argc > 3 ? argv[3] : NULL};
	daemon_open(&a.d);
	json_object_seed(0); /* before the spawner's thread: jansson's one-time set-up */
	spawner_start(a.d.inherited);
	a.ctx = calloc(1, sizeof *a.ctx);
	a.nctx = 1;
	a.ctx[0].name = SBX_CONTEXT_DEFAULT;
	a.ctx[0].has = true;
	worker_init(default_worker(&a), NULL, NULL);
	if (worker_start(&a, default_worker(&a)) < 0)
		sbx_log("the first worker did not start");
	a.before = snapshot_take(NULL);
	agent_preload(&a, default_worker(&a));
	a.before = snapshot_take(a.before);
	serve(&a);
	return 0;
}
