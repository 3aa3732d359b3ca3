/*
 * Python executions. A cell runs in the worker (_sandboxd_worker), an
 * interpreter this supervisor execs, whose globals persist between
 * executions; the supervisor holds its pid and the pipes that lead to it,
 * sends it each cell as a request, relays what it writes and displays,
 * enforces the timeout and the daemon's interrupts, and starts a fresh
 * worker when one dies or does not stop (state_reset). The rules are
 * _sandboxd_cells.py's.
 *
 * The worker runs user code, so nothing it sends is trusted: each request
 * carries a sequence number and a random token that the reply must echo,
 * stray or malformed lines on the control pipe are dropped, and requests go
 * out without blocking.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "supervisor.h"

/* A program can sleep through a SIGINT, so a stop repeats it to the worker
 * every WORKER_RESIGNAL seconds until the cell ends. */
#define WORKER_RESIGNAL 0.2
#define PRELOAD_TIMEOUT 120.0

void worker_init(struct worker *w, const char *cwd, const char *node)
{
	memset(w, 0, sizeof *w);
	w->out = w->err = w->ctrl_r = w->ctrl_w = w->chan = -1;
	w->cwd = cwd && *cwd ? strdup(cwd) : NULL;
	w->node = node ? strdup(node) : NULL;
}

/* worker_free stops w and lets go of what it holds. */
void worker_free(struct worker *w)
{
	worker_stop(w, false);
	free(w->cwd);
	free(w->node);
	w->cwd = w->node = NULL;
}

static void set_nonblocking(int fd)
{
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
}

/* random_fill fills buf from the kernel. getrandom may return fewer bytes
 * than asked for over 256 (a signal on Linux; gVisor's Sentry returned 944
 * of 1024 at a session's 192nd execution), so it asks again for the rest. */
static void random_fill(unsigned char *buf, size_t n)
{
	while (n > 0) {
		ssize_t got = getrandom(buf, n, 0);
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			abort();
		buf += got;
		n -= (size_t)got;
	}
}

/* token writes a fresh random token, 32 hex digits, to out. Tokens come
 * from the kernel 64 at a time: one getrandom less on most executions. */
static void token(char out[33])
{
	static unsigned char pool[16 * 64];
	static size_t left;
	if (left == 0) {
		random_fill(pool, sizeof pool);
		left = sizeof pool;
	}
	unsigned char *t = pool + sizeof pool - left;
	for (int i = 0; i < 16; i++)
		snprintf(out + 2 * i, 3, "%02x", t[i]);
	left -= 16;
}

int worker_start(struct agent *a, struct worker *w)
{
	int rep[2], out[2], err[2], req[2], chan[2];
	/* The replies' pipe first, as the Python supervisor makes it. */
	if (pipe2(rep, O_CLOEXEC) < 0)
		return -1;
	if (pipe2(out, O_CLOEXEC) < 0 || pipe2(err, O_CLOEXEC) < 0 || pipe2(req, O_CLOEXEC) < 0 ||
	    socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, chan) < 0) {
		sbx_log("worker pipes: %s", strerror(errno));
		return -1;
	}
	char boot[4096], script[4096];
	snprintf(boot, sizeof boot,
		 "import sys; sys.path[0] = '%s'; import _sandboxd_worker; _sandboxd_worker.exec_main()", a->dir);
	snprintf(script, sizeof script, "%s/_sandboxd_node.js", a->dir);
	pid_t pid = fork_child();
	if (pid == 0) {
		/* Ignored until the worker sets its own handler (worker_main):
		 * a stop's SIGINT that comes while the interpreter still starts
		 * must not end it; the stop repeats it, and the worker then
		 * keeps it for the cell (PENDING), as a forked worker does.
		 * node takes SIGINT's default, as it does under the Python
		 * supervisor (a stop then ends it: state_reset). */
		if (!w->node)
			signal(SIGINT, SIG_IGN);
		if (w->cwd && chdir(w->cwd) < 0)
			log_errno("context folder", w->cwd);
		int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
		int fds[] = {req[0], rep[1], out[1], err[1], chan[1]};
		dup2(null, 0);
		dup2(out[1], 1);
		dup2(err[1], 2);
		for (int i = 0; i < 5; i++)
			dup2(fds[i], CTRL_FD_BASE + i);
		if (w->node) {
			raise_oom_score();
			execl(w->node, w->node, script, (char *)NULL);
		} else {
			execl(a->python, a->python, "-S", "-c", boot, (char *)NULL);
		}
		log_errno("exec", w->node ? w->node : a->python);
		_exit(127);
	}
	close(rep[1]);
	close(out[1]);
	close(err[1]);
	close(req[0]);
	close(chan[1]);
	if (pid < 0) {
		sbx_log("fork a worker: %s", strerror(errno));
		close(rep[0]);
		close(out[0]);
		close(err[0]);
		close(req[1]);
		close(chan[0]);
		return -1;
	}
	w->pid = pid;
	w->out = out[0];
	w->err = err[0];
	w->ctrl_r = rep[0];
	w->ctrl_w = req[1];
	w->chan = chan[0];
	for (int fd = 0; fd < 4; fd++)
		set_nonblocking((int[]){w->out, w->err, w->ctrl_r, w->ctrl_w}[fd]);
	linebuf_reset(&w->ctrl);
	return 0;
}

bool worker_exited(struct worker *w)
{
	int st;
	return w->pid && exited_status(w->pid, &st);
}

/* worker_stop kills the worker and, when it is alone (no other context's
 * worker to spare), everything else in the sandbox but PID 1. */
void worker_stop(struct worker *w, bool alone)
{
	if (w->pid) {
		if (!(alone && kill_all())) {
			/* Not a sandbox's PID 1 (run by hand or by a test): the
			 * worker's own session is all it may kill. */
			if (killpg(w->pid, SIGKILL) < 0)
				kill(w->pid, SIGKILL);
		}
		int st;
		reap(w->pid, 5.0, &st);
		if (alone)
			reap_all(5.0);
		unwatch(w->pid);
	}
	int *fds[] = {&w->out, &w->err, &w->ctrl_r, &w->ctrl_w, &w->chan};
	for (int i = 0; i < 5; i++) {
		if (*fds[i] >= 0)
			close(*fds[i]);
		*fds[i] = -1;
	}
	linebuf_reset(&w->ctrl);
	w->pid = 0;
}

/* agent_restart starts worker w afresh: stops it (and, alone, everything
 * else in the sandbox but PID 1), starts a new interpreter and runs the
 * preload code in it. */
void agent_restart(struct agent *a, struct worker *w, bool alone)
{
	worker_stop(w, alone);
	worker_start(a, w);
	agent_preload(a, w);
}

/* agent_preload runs the template's preload code in a new worker (a
 * Python one: the preload is Python), quietly. */
void agent_preload(struct agent *a, struct worker *w)
{
	if (!a->preload || !*a->preload || a->preloading || w->node)
		return;
	a->preloading = true;
	json_t *req = json_pack("{s:s, s:f, s:i}", "code", a->preload, "timeout", PRELOAD_TIMEOUT, "max_output", 65536);
	json_t *done = cell_execute(a, w, req, NULL, NULL, -1);
	a->preloading = false;
	json_decref(req);
	if (strcmp(str_of(done, "status", ""), SBX_STATUS_OK) != 0) {
		json_t *e = json_object_get(done, "error");
		json_decref(a->preload_error);
		if (json_is_object(e)) {
			a->preload_error = json_incref(e);
		} else {
			char msg[128];
			snprintf(msg, sizeof msg, "the preload code did not finish (status %s)", str_of(done, "status", ""));
			a->preload_error = json_pack("{s:s, s:s, s:s}", "name", str_of(done, "status", ""), "value", msg, "traceback", "");
		}
		sbx_log("preload failed: %s: %s", str_of(a->preload_error, "name", ""), str_of(a->preload_error, "value", ""));
	}
	json_decref(done);
}

/* take_reply is the reply to the current request among the complete lines
 * read, if any; each display line of the request before it is shown
 * (on_display). Anything else is user code writing to the control pipe. */
struct run {
	struct agent *a;
	struct worker *w;
	struct daemon *out;
	struct capture caps[2];
	struct budget budget;
	char token[33];
	char *pending; /* what is left to write to the worker */
	size_t npending;
};

static void pend(struct run *r, const char *data, size_t n)
{
	r->pending = realloc(r->pending, r->npending + n);
	if (!r->pending)
		abort();
	memcpy(r->pending + r->npending, data, n);
	r->npending += n;
}

static void write_pending(struct run *r)
{
	while (r->npending > 0) {
		ssize_t k = write(r->w->ctrl_w, r->pending, r->npending);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0) {
			if (errno != EAGAIN)
				r->npending = 0; /* a dead worker shows as end of file */
			return;
		}
		memmove(r->pending, r->pending + k, r->npending - k);
		r->npending -= k;
	}
}

static void on_display(struct run *r, json_t *o)
{
	/* What the cell wrote before display() is in the pipes: it goes
	 * first. The worker waits for the empty line that says so. */
	drain(r->w->out, &r->caps[0]);
	drain(r->w->err, &r->caps[1]);
	json_t *c = budget_output(&r->budget, o);
	if (c) {
		json_t *m = json_pack("{s:s, s:o}", "type", SBX_TYPE_DISPLAY, "output", c);
		daemon_send(r->out, m);
		json_decref(m);
	}
	pend(r, "\n", 1);
	write_pending(r);
}

static json_t *take_reply(struct run *r)
{
	struct worker *w = r->w;
	char *line;
	size_t n;
	while ((line = linebuf_take(&w->ctrl, &n)) != NULL) {
		json_t *msg = n ? parse_line(line, n) : NULL;
		free(line);
		if (msg && int_of(msg, "seq", -1) == w->seq && json_is_integer(json_object_get(msg, "seq")) &&
		    strcmp(str_of(msg, "token", ""), r->token) == 0) {
			json_t *d = json_object_get(msg, "display");
			if (!d)
				return msg;
			on_display(r, d);
			json_decref(msg);
			continue;
		}
		if (msg)
			json_decref(msg);
		if (n == 0)
			continue;
		if (!w->stray)
			sbx_log("dropped a stray line on the worker's control pipe");
		w->stray++;
	}
	if (w->ctrl.len > (size_t)256 << 20)
		linebuf_reset(&w->ctrl); /* a line this long is not a reply */
	return NULL;
}

/* cell_execute runs a cell (req) in the agent's worker; out is where its
 * output and displays go (NULL: dropped, the agent's own cells); exec_id,
 * for an execution of the daemon's, lets the daemon interrupt it; start is
 * when the request came (monotonic), or < 0. Returns the done line's
 * fields (without type, id, language and duration). */
json_t *cell_execute(struct agent *a, struct worker *w, json_t *req, struct daemon *out, const char *exec_id, double start)
{
	long long limit = int_of(req, "max_output", 1 << 20);
	double timeout = num_of(req, "timeout", 30), grace = num_of(req, "grace", 1.0);
	bool noop = json_is_true(json_object_get(req, "noop"));
	json_t *done = done_new();
	struct run r = {.a = a, .w = w, .out = out};
	budget_init(&r.budget, int_of(req, "max_answer", 0) ? int_of(req, "max_answer", 0) : 4 << 20);
	if (worker_exited(w)) {
		/* The last cell left no interpreter behind: start afresh. */
		unwatch(w->pid);
		w->pid = 0;
		agent_restart(a, w, agent_alone(a));
		json_object_set_new(done, "state_reset", json_true());
	}
	capture_init(&r.caps[0], SBX_TYPE_STDOUT, out, limit, &r.budget);
	capture_init(&r.caps[1], SBX_TYPE_STDERR, out, limit, &r.budget);
	/* Output left over from background processes of earlier cells, and
	 * control lines nobody asked for, belong to nobody. */
	discard(w->out);
	discard(w->err);
	discard(w->ctrl_r);
	linebuf_reset(&w->ctrl);
	w->stray = 0;
	w->seq++;
	token(r.token);
	json_t *wreq = json_object();
	json_t *code = json_object_get(req, "code");
	json_object_set_new(wreq, "code", json_is_string(code) ? json_incref(code) : json_string(""));
	json_t *env = json_object_get(req, "env");
	json_object_set_new(wreq, "env", json_is_object(env) ? json_incref(env) : json_object());
	json_object_set_new(wreq, "cwd", json_string(str_of(req, "cwd", "")));
	json_object_set_new(wreq, "max_output", json_integer(limit));
	json_object_set_new(wreq, "max_answer", json_integer(r.budget.left));
	json_object_set_new(wreq, "noop", json_boolean(noop));
	json_object_set_new(wreq, "reseed", json_boolean(w->reseed));
	json_object_set_new(wreq, "seq", json_integer(w->seq));
	json_object_set_new(wreq, "token", json_string(r.token));
	w->reseed = false;
	size_t n = json_dumpb(wreq, NULL, 0, JSON_COMPACT);
	r.pending = malloc(n + 1);
	json_dumpb(wreq, r.pending, n, JSON_COMPACT);
	r.pending[n] = '\n';
	r.npending = n + 1;
	json_decref(wreq);
	write_pending(&r);

	double now = start >= 0 ? start : monotonic(), deadline = now + timeout;
	const char *stopping = NULL;
	double kill_at = -1, signalled = -1;
	json_t *reply = NULL;
	bool dead = false, out_open = true, err_open = true;
	bool interrupt = daemon_read(&a->d, exec_id, false);
	while (!reply && !dead) {
		if (!stopping && (interrupt || now >= deadline)) {
			stopping = interrupt ? SBX_STATUS_INTERRUPTED : SBX_STATUS_TIMEOUT;
			kill_at = now + grace;
		}
		if (stopping && (signalled < 0 || now >= signalled + WORKER_RESIGNAL)) {
			signal_group(w->pid, SIGINT);
			signalled = now;
		}
		if (kill_at >= 0 && now >= kill_at)
			break;
		double wait = (kill_at >= 0 ? kill_at : deadline) - now;
		if (signalled >= 0 && signalled + WORKER_RESIGNAL - now < wait)
			wait = signalled + WORKER_RESIGNAL - now;
		struct pollfd p[6];
		int np = 0, iout = -1, ierr = -1, ictrl, idaemon = -1, isig;
		ictrl = np;
		p[np++] = (struct pollfd){w->ctrl_r, POLLIN, 0};
		if (out_open) {
			iout = np;
			p[np++] = (struct pollfd){w->out, POLLIN, 0};
		}
		if (err_open) {
			ierr = np;
			p[np++] = (struct pollfd){w->err, POLLIN, 0};
		}
		int dfd = daemon_watched(&a->d, exec_id);
		if (dfd >= 0) {
			idaemon = np;
			p[np++] = (struct pollfd){dfd, POLLIN, 0};
		}
		isig = np;
		p[np++] = (struct pollfd){reaper_fd(), POLLIN, 0};
		int iw = -1;
		if (r.npending) {
			iw = np;
			p[np++] = (struct pollfd){w->ctrl_w, POLLOUT, 0};
		}
		if (poll(p, np, poll_ms(wait)) < 0) {
			now = monotonic();
			continue;
		}
		if (iw >= 0 && p[iw].revents)
			write_pending(&r);
		if (p[isig].revents)
			reap_zombies();
		if (idaemon >= 0 && p[idaemon].revents)
			interrupt = daemon_read(&a->d, exec_id, true) || interrupt;
		if (iout >= 0 && p[iout].revents && !drain(w->out, &r.caps[0]))
			out_open = false;
		if (ierr >= 0 && p[ierr].revents && !drain(w->err, &r.caps[1]))
			err_open = false;
		if (p[ictrl].revents) {
			int k = linebuf_fill(&w->ctrl, w->ctrl_r);
			if (k <= 0) {
				dead = true;
				break;
			}
			reply = take_reply(&r);
		}
		if (!reply && !dead)
			now = monotonic();
	}
	/* Output the cell wrote before its reply: the worker flushes it
	 * before it replies, so it is in the pipes by now. */
	drain(w->out, &r.caps[0]);
	drain(w->err, &r.caps[1]);
	capture_finish(&r.caps[0]);
	capture_finish(&r.caps[1]);
	free(r.pending);
	bool truncated = r.caps[0].truncated || r.caps[1].truncated;
	if (reply) {
		/* The worker cut what it could; it is user code's process, so
		 * what it sent is cut again here. */
		json_t *e = budget_error(&r.budget, json_object_get(reply, "error"));
		json_t *res = json_object_get(reply, "result");
		json_object_set_new(done, "error", e ? e : json_null());
		json_object_set_new(done, "result", json_is_string(res) ? budget_text(&r.budget, json_string_value(res), json_string_length(res)) : json_null());
		json_object_set_new(done, "outputs", budget_outputs(&r.budget, json_object_get(reply, "outputs")));
		truncated = truncated || r.budget.cut || json_is_true(json_object_get(reply, "truncated"));
		json_object_set_new(done, "truncated", json_boolean(truncated));
		json_decref(reply);
		if (e && json_object_size(e) > 0) {
			json_object_set_new(done, "status", json_string(SBX_STATUS_ERROR));
			json_object_set_new(done, "exit_code", json_integer(1));
		}
		if (stopping) {
			json_object_set_new(done, "status", json_string(stopping));
			json_object_set_new(done, "exit_code", json_integer(STOPPED_EXIT_CODE(stopping)));
			/* The cell stopped; what it started stops too. */
			pid_t *spare;
			size_t nspare = worker_pids(a, &spare);
			kill_new(a->before, spare, nspare, 2.0);
			free(spare);
		}
		if (signalled >= 0 && !noop) {
			/* A SIGINT that reached the worker after the cell ended
			 * must not stop the next one (see the worker's on_sigint). */
			json_t *nreq = json_pack("{s:s, s:b, s:i}", "code", "", "noop", 1, "timeout", 10);
			json_decref(cell_execute(a, w, nreq, NULL, NULL, -1));
			json_decref(nreq);
		}
		return done;
	}
	json_object_set_new(done, "truncated", json_boolean(truncated));
	/* The worker died, or ignored the interrupt: start over. */
	int status = 0;
	bool have = false;
	if (dead) {
		have = reap(w->pid, 1.0, &status);
		unwatch(w->pid);
		w->pid = 0;
	}
	agent_restart(a, w, agent_alone(a));
	json_object_set_new(done, "state_reset", json_true());
	if (stopping) {
		json_object_set_new(done, "status", json_string(stopping));
		json_object_set_new(done, "exit_code", json_integer(STOPPED_EXIT_CODE(stopping)));
	} else if (have && WIFSIGNALED(status)) {
		char msg[128];
		snprintf(msg, sizeof msg, "the interpreter was killed by signal %d (out of memory?)", WTERMSIG(status));
		json_object_set_new(done, "status", json_string(SBX_STATUS_KILLED));
		json_object_set_new(done, "exit_code", json_integer(128 + WTERMSIG(status)));
		json_object_set_new(done, "error", json_pack("{s:s, s:s, s:s}", "name", "Killed", "value", msg, "traceback", ""));
	} else {
		int code = have && WIFEXITED(status) ? WEXITSTATUS(status) : 1;
		char msg[128];
		snprintf(msg, sizeof msg, "the interpreter exited with status %d", code);
		json_object_set_new(done, "status", json_string(SBX_STATUS_ERROR));
		json_object_set_new(done, "exit_code", json_integer(code));
		json_object_set_new(done, "error", json_pack("{s:s, s:s, s:s}", "name", "SystemExit", "value", msg, "traceback", ""));
	}
	return done;
}

/* FORK_WAIT bounds a worker's fork of itself: it forks between cells, at
 * once. */
#define FORK_WAIT 10.0

/* receive_fds takes the n fds the worker sent over its fork channel (sock),
 * waiting at most until deadline. */
static int receive_fds(int sock, int *fds, int n, double deadline)
{
	struct pollfd p = {sock, POLLIN, 0};
	double wait = deadline - monotonic();
	if (wait <= 0 || poll(&p, 1, (int)(wait * 1000) + 1) <= 0)
		return -1;
	char byte;
	struct iovec iov = {&byte, 1};
	union {
		char buf[CMSG_SPACE(sizeof(int) * 8)];
		struct cmsghdr align;
	} u;
	struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof u.buf};
	ssize_t k = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
	if (k <= 0)
		return -1;
	int got = 0;
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		int m = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		int *in = (int *)CMSG_DATA(c);
		for (int i = 0; i < m; i++) {
			if (got < n)
				fds[got++] = in[i];
			else
				close(in[i]);
		}
	}
	if (got != n || (msg.msg_flags & MSG_CTRUNC)) {
		for (int i = 0; i < got; i++)
			close(fds[i]);
		return -1;
	}
	return 0;
}

/* worker_fork makes copy a new worker, a copy of src's interpreter (every
 * global, copied on write), started in cwd if given, as its own process
 * group (see _sandboxd_fork). It makes contexts' "from" copies and undo
 * checkpoints. On failure it returns -1 and says why. */
int worker_fork(struct worker *src, const char *cwd, struct worker *copy, char *why, size_t whylen)
{
	struct run r = {.w = src};
	src->seq++;
	token(r.token);
	json_t *req = json_pack("{s:b, s:s, s:I, s:s}", "fork", 1, "cwd", cwd ? cwd : "", "seq", (json_int_t)src->seq, "token", r.token);
	size_t n = json_dumpb(req, NULL, 0, JSON_COMPACT);
	r.pending = malloc(n + 1);
	json_dumpb(req, r.pending, n, JSON_COMPACT);
	r.pending[n] = '\n';
	r.npending = n + 1;
	json_decref(req);
	discard(src->out);
	discard(src->err);
	discard(src->ctrl_r);
	linebuf_reset(&src->ctrl);
	double deadline = monotonic() + FORK_WAIT;
	json_t *reply = NULL;
	while (!reply) {
		double wait = deadline - monotonic();
		if (wait <= 0) {
			snprintf(why, whylen, "the interpreter did not fork within %.0f s", FORK_WAIT);
			break;
		}
		struct pollfd p[2] = {{src->ctrl_r, POLLIN, 0}, {src->ctrl_w, POLLOUT, 0}};
		if (poll(p, r.npending ? 2 : 1, (int)(wait * 1000) + 1) < 0)
			continue;
		if (r.npending && p[1].revents)
			write_pending(&r);
		if (p[0].revents) {
			int k = linebuf_fill(&src->ctrl, src->ctrl_r);
			if (k <= 0) {
				snprintf(why, whylen, "the interpreter ended");
				break;
			}
			reply = take_reply(&r);
		}
	}
	free(r.pending);
	if (!reply)
		return -1;
	long long pid = int_of(reply, "pid", -1);
	json_decref(reply);
	if (pid <= 0) {
		snprintf(why, whylen, "the interpreter could not fork");
		return -1;
	}
	int fds[5];
	if (receive_fds(src->chan, fds, 5, monotonic() + FORK_WAIT) < 0) {
		snprintf(why, whylen, "the worker did not send its copy's fds");
		return -1;
	}
	worker_init(copy, cwd, NULL);
	copy->pid = pid;
	copy->out = fds[0];
	copy->err = fds[1];
	copy->ctrl_r = fds[2];
	copy->ctrl_w = fds[3];
	copy->chan = fds[4];
	for (int i = 0; i < 4; i++)
		set_nonblocking(fds[i]);
	watch(pid);
	return 0;
}
