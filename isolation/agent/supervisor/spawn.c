/*
 * Processes the daemon starts beside the interpreter (protocol 16), as
 * _sandboxd_spawn.py starts them: a runtime's exec costs 15-20 ms a
 * process, a fork here one, and the supervisor already is what such a
 * process must be (the sandbox's user, namespaces, cgroup, seccomp filter,
 * no_new_privs, no capabilities).
 *
 * A listener of its own, beside the daemon's (SBX_SPAWN_FD, made by the
 * daemon on the host; under gVisor SBX_SPAWN_PATH), served by a thread: a
 * process starts while an execution runs. One connection a process:
 *   -> {"argv":[S],"env":["K=V"],"cwd":S}\n  with SCM_RIGHTS: stdin,
 *      stdout, stderr
 *   <- {"pid":N}\n  or  {"error":S}\n (then the connection closes)
 *   -> {"signal":N}\n  at any time: kill(pid, N)
 *   <- {"exit":N}\n  once it has ended (128+S for signal S), then the close
 * A daemon that hangs up lets the process run on, unwatched.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "supervisor.h"

/* MAX_LINE bounds a request line (argv and env) and a command line. */
#define MAX_LINE (16 << 20)
/* FDS is how many descriptors a request carries. */
#define FDS 3
/* IO_WAIT bounds a request's read and an answer's write: the daemon is on
 * the other end, and a stuck one must not stop the thread. */
#define IO_WAIT 5

struct child {
	int conn;
	pid_t pid;
	char *buf;
	size_t n;
};

static struct {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int listener; /* -1: none (paused, or no spawner) */
	int wake;     /* an eventfd the main thread wakes the thread with */
	bool pause, paused;
	struct child *kids;
	size_t nkids;
} S = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, -1, -1, false, false, NULL, 0};

static void send_line(int conn, json_t *msg)
{
	char *s = json_dumps(msg, JSON_COMPACT);
	if (s) {
		size_t n = strlen(s);
		s[n] = '\n'; /* json_dumps's NUL becomes the newline */
		(void)write_all(conn, s, n + 1);
		free(s);
	}
}

static void send_error(int conn, const char *text)
{
	json_t *m = json_pack("{s:s}", "error", text);
	send_line(conn, m);
	json_decref(m);
}

/* receive reads a request's line and the descriptors that came with it;
 * NULL and why if it cannot. */
static char *receive(int conn, int *fds, int *nfds, char *why, size_t whylen)
{
	size_t cap = 65536, n = 0;
	char *buf = malloc(cap + 1);
	union {
		char c[CMSG_SPACE(sizeof(int) * FDS)];
		struct cmsghdr align;
	} u;
	struct iovec iov = {buf, cap};
	struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.c, .msg_controllen = sizeof u.c};
	ssize_t k = recvmsg(conn, &msg, MSG_CMSG_CLOEXEC);
	*nfds = 0;
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); k >= 0 && c; c = CMSG_NXTHDR(&msg, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		int m = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (int i = 0; i < m; i++) {
			int fd = ((int *)CMSG_DATA(c))[i];
			if (*nfds < FDS + 1)
				fds[(*nfds)++] = fd;
			else
				close(fd);
		}
	}
	if (k < 0) {
		snprintf(why, whylen, "%s", strerror(errno));
		goto fail;
	}
	if (msg.msg_flags & MSG_CTRUNC) {
		snprintf(why, whylen, "too many descriptors");
		goto fail;
	}
	n = k;
	while (!memchr(buf, '\n', n)) {
		if (n > MAX_LINE) {
			snprintf(why, whylen, "the request is too long");
			goto fail;
		}
		if (cap - n < 65536) {
			cap *= 2;
			buf = realloc(buf, cap + 1);
		}
		k = read(conn, buf + n, cap - n);
		if (k <= 0) {
			snprintf(why, whylen, "the request was cut short");
			goto fail;
		}
		n += k;
	}
	*(char *)memchr(buf, '\n', n) = 0;
	return buf;
fail:
	for (int i = 0; i < *nfds; i++)
		close(fds[i]);
	*nfds = 0;
	free(buf);
	return NULL;
}

/* strings_of is the JSON array a as a NULL-ended array of its strings;
 * NULL, and why, if it is not one or a string holds a NUL. */
static char **strings_of(json_t *a, const char *what, char *why, size_t whylen)
{
	if (!json_is_array(a)) {
		snprintf(why, whylen, "the request's %s is not a list", what);
		return NULL;
	}
	char **out = calloc(json_array_size(a) + 1, sizeof *out);
	size_t i;
	json_t *v;
	json_array_foreach(a, i, v) {
		if (!json_is_string(v) || strlen(json_string_value(v)) != json_string_length(v)) {
			snprintf(why, whylen, json_is_string(v) ? "embedded null byte" : "the request's %s holds a non-string", what);
			free(out);
			return NULL;
		}
		out[i] = (char *)json_string_value(v);
	}
	return out;
}

/* env_of is the request's environment, "K=V" strings, the last of each
 * name kept (as a dict of them would); one without "=" is K with no value. */
static char **env_of(char **kv)
{
	size_t n = 0;
	while (kv[n])
		n++;
	char **out = calloc(n + 1, sizeof *out);
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		char *s = strchr(kv[i], '=') ? strdup(kv[i]) : (asprintf(&s, "%s=", kv[i]) < 0 ? NULL : s);
		if (!s)
			continue;
		size_t name = strchr(s, '=') - s;
		size_t j = 0;
		while (j < k && !(strncmp(out[j], s, name + 1) == 0))
			j++;
		if (j < k) {
			free(out[j]);
			out[j] = s;
		} else {
			out[k++] = s;
		}
	}
	return out;
}

/* candidates are the paths to try for argv0: itself if it holds a slash,
 * else each folder of the environment's PATH (or "/bin:/usr/bin", as
 * Python's subprocess). */
static char **candidates(const char *argv0, char **env)
{
	if (strchr(argv0, '/')) {
		char **out = calloc(2, sizeof *out);
		out[0] = strdup(argv0);
		return out;
	}
	const char *path = "/bin:/usr/bin";
	for (size_t i = 0; env[i]; i++)
		if (strncmp(env[i], "PATH=", 5) == 0)
			path = env[i] + 5;
	size_t n = 1;
	for (const char *p = path; *p; p++)
		n += *p == ':';
	char **out = calloc(n + 1, sizeof *out);
	char *dirs = strdup(path), *save = NULL;
	size_t k = 0;
	for (char *d = strtok_r(dirs, ":", &save); d; d = strtok_r(NULL, ":", &save))
		if (asprintf(&out[k], "%s/%s", *d ? d : ".", argv0) >= 0)
			k++;
	free(dirs);
	return out;
}

static void free_all(char **v)
{
	for (size_t i = 0; v && v[i]; i++)
		free(v[i]);
	free(v);
}

/* start forks and execs the request's process with fds as its stdio; its
 * pid, or -1 and why. */
static pid_t start(json_t *req, int *fds, char *why, size_t whylen)
{
	char **argv = strings_of(json_object_get(req, "argv"), "argv", why, whylen);
	if (!argv)
		return -1;
	if (!argv[0]) {
		snprintf(why, whylen, "no command to run");
		free(argv);
		return -1;
	}
	json_t *e = json_object_get(req, "env");
	char **kv = json_is_null(e) || !e ? calloc(1, sizeof(char *)) : strings_of(e, "env", why, whylen);
	if (!kv) {
		free(argv);
		return -1;
	}
	char **env = env_of(kv);
	free(kv);
	char **paths = candidates(argv[0], env);
	const char *cwd = str_of(req, "cwd", "");
	int errp[2];
	pid_t pid = -1;
	if (pipe2(errp, O_CLOEXEC) < 0) {
		snprintf(why, whylen, "%s", strerror(errno));
		goto out;
	}
	pid = fork_child();
	if (pid == 0) {
		for (int i = 0; i < FDS; i++)
			if (dup2(fds[i], i) < 0)
				_exit(127);
		int report[2] = {'c', 0};
		if (*cwd && chdir(cwd) < 0) {
			report[1] = errno;
			(void)!write(errp[1], report, sizeof report);
			_exit(127);
		}
		close_range(3, errp[1] - 1, 0);
		close_range(errp[1] + 1, ~0U, 0);
		int saved = 0;
		for (size_t i = 0; paths[i]; i++) {
			execve(paths[i], argv, env);
			if (saved == 0 && errno != ENOENT && errno != ENOTDIR)
				saved = errno;
		}
		report[0] = 'e';
		report[1] = saved ? saved : errno;
		(void)!write(errp[1], report, sizeof report);
		_exit(127);
	}
	close(errp[1]);
	if (pid < 0) {
		snprintf(why, whylen, "%s", strerror(errno));
		close(errp[0]);
		goto out;
	}
	int report[2];
	ssize_t k;
	do
		k = read(errp[0], report, sizeof report);
	while (k < 0 && errno == EINTR);
	close(errp[0]);
	if (k == sizeof report) {
		/* The system's words, and the path they are about. */
		snprintf(why, whylen, "%s: %s", report[0] == 'c' ? cwd : argv[0], strerror(report[1]));
		int st;
		reap(pid, 5.0, &st);
		unwatch(pid);
		pid = -1;
	}
out:
	free(argv);
	free_all(env);
	free_all(paths);
	return pid;
}

static void accept_one(void)
{
	int conn = accept4(S.listener, NULL, NULL, SOCK_CLOEXEC);
	if (conn < 0)
		return;
	struct timeval tv = {IO_WAIT, 0};
	setsockopt(conn, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	setsockopt(conn, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
	int fds[FDS + 1], nfds = 0;
	char why[512];
	pid_t pid = -1;
	char *line = receive(conn, fds, &nfds, why, sizeof why);
	if (line) {
		json_t *req = parse_line(line, strlen(line));
		if (!req)
			snprintf(why, sizeof why, "not JSON");
		else if (nfds != FDS)
			snprintf(why, sizeof why, "a process needs %d descriptors, not %d", FDS, nfds);
		else
			pid = start(req, fds, why, sizeof why);
		json_decref(req);
		free(line);
	}
	for (int i = 0; i < nfds; i++)
		close(fds[i]);
	if (pid < 0) {
		send_error(conn, why);
		close(conn);
		return;
	}
	json_t *m = json_pack("{s:i}", "pid", (int)pid);
	send_line(conn, m);
	json_decref(m);
	pthread_mutex_lock(&S.mu);
	S.kids = realloc(S.kids, (S.nkids + 1) * sizeof *S.kids);
	S.kids[S.nkids++] = (struct child){conn, pid, NULL, 0};
	pthread_mutex_unlock(&S.mu);
}

/* forget lets go of kid i: the daemon let go, or it has ended. */
static void forget(size_t i)
{
	pthread_mutex_lock(&S.mu);
	unwatch(S.kids[i].pid);
	close(S.kids[i].conn);
	free(S.kids[i].buf);
	S.kids[i] = S.kids[--S.nkids];
	pthread_mutex_unlock(&S.mu);
}

/* command reads kid i's connection: signals to send, or its end. Returns
 * whether kid i is still there. */
static bool command(size_t i)
{
	struct child *c = &S.kids[i];
	char buf[4096];
	ssize_t k = recv(c->conn, buf, sizeof buf, MSG_DONTWAIT);
	if (k < 0 && (errno == EAGAIN || errno == EINTR))
		return true;
	if (k <= 0) {
		forget(i); /* the daemon let go: it runs on */
		return false;
	}
	c->buf = realloc(c->buf, c->n + k);
	memcpy(c->buf + c->n, buf, k);
	c->n += k;
	char *nl;
	while ((nl = memchr(c->buf, '\n', c->n)) != NULL) {
		json_t *m = parse_line(c->buf, nl - c->buf);
		json_t *sig = json_object_get(m, "signal");
		if (json_is_integer(sig))
			kill(c->pid, (int)json_integer_value(sig));
		json_decref(m);
		memmove(c->buf, nl + 1, c->n - (nl + 1 - c->buf));
		c->n -= nl + 1 - c->buf;
	}
	if (c->n > MAX_LINE) {
		forget(i);
		return false;
	}
	return true;
}

/* ended tells the daemon of every process that has ended. */
static void ended(void)
{
	for (size_t i = 0; i < S.nkids;) {
		int st;
		if (!exited_status(S.kids[i].pid, &st)) {
			i++;
			continue;
		}
		json_t *m = json_pack("{s:i}", "exit", WIFSIGNALED(st) ? 128 + WTERMSIG(st) : WEXITSTATUS(st));
		send_line(S.kids[i].conn, m);
		json_decref(m);
		forget(i);
	}
}

static void *serve(void *arg)
{
	(void)arg;
	for (;;) {
		size_t n = S.nkids;
		struct pollfd *p = calloc(n + 4, sizeof *p);
		int np = 0;
		p[np++] = (struct pollfd){S.wake, POLLIN, 0};
		p[np++] = (struct pollfd){reaped_fd(REAPED_SPAWNER), POLLIN, 0};
		p[np++] = (struct pollfd){reaper_fd(), POLLIN, 0};
		int ilisten = -1;
		if (S.listener >= 0) {
			ilisten = np;
			p[np++] = (struct pollfd){S.listener, POLLIN, 0};
		}
		int first = np;
		for (size_t i = 0; i < n; i++)
			p[np++] = (struct pollfd){S.kids[i].conn, POLLIN, 0};
		if (poll(p, np, -1) < 0) {
			free(p);
			continue;
		}
		uint64_t v;
		if (p[0].revents)
			(void)!read(S.wake, &v, sizeof v);
		if (p[1].revents)
			reaped_clear(REAPED_SPAWNER);
		if (p[2].revents)
			reap_zombies();
		/* Connections from the last to the first: forget moves the last
		 * one into the place it frees. */
		for (int j = np - 1; j >= first; j--)
			if (p[j].revents)
				command(j - first);
		if (ilisten >= 0 && p[ilisten].revents)
			accept_one();
		free(p);
		ended();
		pthread_mutex_lock(&S.mu);
		if (S.pause && S.listener >= 0) {
			close(S.listener);
			S.listener = -1;
			if (unlink(SBX_SPAWN_PATH) < 0)
				sbx_log("unlink %s: %s", SBX_SPAWN_PATH, strerror(errno));
			S.paused = true;
			pthread_cond_broadcast(&S.cv);
		}
		pthread_mutex_unlock(&S.mu);
	}
	return NULL;
}

/* spawner_start listens for the daemon's processes and serves them from a
 * thread: on SBX_SPAWN_FD if the daemon's listener was inherited (it made
 * this one too), else at SBX_SPAWN_PATH. Without the listener the runtime
 * runs the processes. */
void spawner_start(bool inherited)
{
	int on = 0;
	socklen_t len = sizeof on;
	if (inherited) {
		if (getsockopt(SBX_SPAWN_FD, SOL_SOCKET, SO_ACCEPTCONN, &on, &len) < 0 || !on)
			return;
		S.listener = SBX_SPAWN_FD;
		fcntl(S.listener, F_SETFD, FD_CLOEXEC);
	} else if ((S.listener = listen_at(SBX_SPAWN_PATH)) < 0) {
		sbx_log("no listener for processes: %s", strerror(errno));
		return;
	}
	S.wake = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	pthread_t t;
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	if (pthread_create(&t, &attr, serve, NULL) != 0) {
		sbx_log("no thread for processes");
		close(S.listener);
		S.listener = -1;
	}
	pthread_attr_destroy(&attr);
}

/* spawner_running is how many processes the daemon started are watched
 * still. */
int spawner_running(void)
{
	pthread_mutex_lock(&S.mu);
	int n = S.nkids;
	pthread_mutex_unlock(&S.mu);
	return n;
}

static void wake(void)
{
	uint64_t one = 1;
	(void)!write(S.wake, &one, sizeof one);
}

/* spawner_pause has the thread close its listener (for a checkpoint, see
 * quiesce.c), and waits until it has. */
void spawner_pause(void)
{
	pthread_mutex_lock(&S.mu);
	if (S.listener >= 0 && S.wake >= 0) {
		S.pause = true;
		S.paused = false;
		wake();
		struct timespec until;
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_sec += IO_WAIT;
		while (!S.paused)
			if (pthread_cond_timedwait(&S.cv, &S.mu, &until) != 0) {
				sbx_log("spawner: did not pause");
				break;
			}
	}
	pthread_mutex_unlock(&S.mu);
}

/* spawner_resume listens for the daemon's processes again, after a pause;
 * false if it cannot yet. */
bool spawner_resume(void)
{
	bool ok = true;
	pthread_mutex_lock(&S.mu);
	if (S.pause) {
		int fd = S.listener >= 0 ? S.listener : listen_at(SBX_SPAWN_PATH);
		if (fd < 0) {
			ok = false;
		} else {
			S.pause = false;
			S.listener = fd;
			wake();
		}
	}
	pthread_mutex_unlock(&S.mu);
	return ok;
}
