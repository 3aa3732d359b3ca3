/*
 * Lines and JSON, each way: the daemon's connection (one at a time, on the
 * listener the runtime passed on SBX_LISTEN_FD, or one made at
 * SBX_LISTEN_PATH where none was passed: gVisor), the line reader both the
 * daemon's and the worker's channels use, and the log (fd 2: the agent's
 * log on the host).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "supervisor.h"

void sbx_log(const char *fmt, ...)
{
	char buf[1024];
	va_list ap;
	int n = snprintf(buf, sizeof buf, "sandboxd-agent: ");
	va_start(ap, fmt);
	n += vsnprintf(buf + n, sizeof buf - n - 1, fmt, ap);
	va_end(ap);
	if (n > (int)sizeof buf - 2)
		n = sizeof buf - 2;
	buf[n++] = '\n';
	(void)!write(2, buf, n);
}

/* log_errno logs "what path: errno's text" with write alone: it is safe
 * in a forked child before its exec. */
void log_errno(const char *what, const char *path)
{
	const char *why = strerrordesc_np(errno);
	const char *parts[] = {"sandboxd-agent: ", what, " ", path, ": ", why ? why : "error", "\n"};
	for (size_t i = 0; i < sizeof parts / sizeof *parts; i++)
		(void)!write(2, parts[i], strlen(parts[i]));
}

double monotonic(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int poll_ms(double wait)
{
	if (wait <= 0)
		return 0;
	if (wait > 3600)
		return 3600 * 1000; /* the loops that poll look again: no overflow */
	return (int)(wait * 1000) + 1;
}

int write_all(int fd, const char *data, size_t n)
{
	while (n > 0) {
		ssize_t k = write(fd, data, n);
		if (k < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		data += k;
		n -= k;
	}
	return 0;
}

int linebuf_fill(struct linebuf *lb, int fd)
{
	if (lb->cap - lb->len < READ_CHUNK) {
		size_t cap = lb->cap ? lb->cap * 2 : READ_CHUNK * 2;
		while (cap - lb->len < READ_CHUNK)
			cap *= 2;
		char *b = realloc(lb->buf, cap);
		if (!b)
			return -1;
		lb->buf = b;
		lb->cap = cap;
	}
	for (;;) {
		ssize_t k = read(fd, lb->buf + lb->len, READ_CHUNK);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0 && errno == EAGAIN)
			return 1;
		if (k < 0)
			return -1;
		if (k == 0)
			return 0;
		lb->len += k;
		return 1;
	}
}

char *linebuf_take(struct linebuf *lb, size_t *n)
{
	char *nl = lb->len > lb->scan ? memchr(lb->buf + lb->scan, '\n', lb->len - lb->scan) : NULL;
	if (!nl) {
		lb->scan = lb->len;
		return NULL;
	}
	size_t i = nl - lb->buf;
	char *line = malloc(i + 1);
	if (!line)
		abort();
	memcpy(line, lb->buf, i);
	line[i] = 0;
	memmove(lb->buf, lb->buf + i + 1, lb->len - i - 1);
	lb->len -= i + 1;
	lb->scan = 0;
	*n = i;
	return line;
}

void linebuf_reset(struct linebuf *lb)
{
	free(lb->buf);
	memset(lb, 0, sizeof *lb);
}

/* lone_surrogates_replaced rewrites \uD800-\uDFFF escapes that are not a
 * pair as \uFFFD, in place: Python's json writes a lone surrogate of a str
 * so (an exception's message may hold one), and jansson refuses it. */
static void lone_surrogates_replaced(char *s, size_t n)
{
	for (size_t i = 0; i + 1 < n; i++) {
		if (s[i] != '\\')
			continue;
		if (s[i + 1] != 'u' || i + 6 > n) {
			i++; /* an escape of one character: skip it */
			continue;
		}
		unsigned v;
		char hex[5] = {s[i + 2], s[i + 3], s[i + 4], s[i + 5], 0};
		if (sscanf(hex, "%4x", &v) != 1) {
			i++;
			continue;
		}
		if (v >= 0xD800 && v <= 0xDBFF && i + 12 <= n && s[i + 6] == '\\' && s[i + 7] == 'u') {
			unsigned lo;
			char hex2[5] = {s[i + 8], s[i + 9], s[i + 10], s[i + 11], 0};
			if (sscanf(hex2, "%4x", &lo) == 1 && lo >= 0xDC00 && lo <= 0xDFFF) {
				i += 11; /* a pair */
				continue;
			}
		}
		if (v >= 0xD800 && v <= 0xDFFF)
			memcpy(s + i + 2, "FFFD", 4);
		i += 5;
	}
}

json_t *parse_line(const char *line, size_t n)
{
	json_t *v = json_loadb(line, n, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
	if (!v && memmem(line, n, "\\u", 2)) {
		char *c = malloc(n);
		if (!c)
			return NULL;
		memcpy(c, line, n);
		lone_surrogates_replaced(c, n);
		v = json_loadb(c, n, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
		free(c);
	}
	if (v && !json_is_object(v)) {
		json_decref(v);
		return NULL;
	}
	return v;
}

const char *str_of(json_t *obj, const char *key, const char *def)
{
	json_t *v = json_object_get(obj, key);
	return json_is_string(v) ? json_string_value(v) : def;
}

double num_of(json_t *obj, const char *key, double def)
{
	json_t *v = json_object_get(obj, key);
	return json_is_number(v) ? json_number_value(v) : def;
}

long long int_of(json_t *obj, const char *key, long long def)
{
	json_t *v = json_object_get(obj, key);
	if (json_is_integer(v))
		return json_integer_value(v);
	if (json_is_real(v))
		return (long long)json_real_value(v);
	return def;
}

/* inherited reports whether fd is a listening socket (the daemon made it). */
static bool inherited(int fd)
{
	int on = 0;
	socklen_t len = sizeof on;
	return getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &on, &len) == 0 && on;
}

/* listen_at makes a listening socket at path (in a folder of the host's,
 * where gVisor passes no descriptor), replacing a stale file there; -1 if
 * it cannot. */
int listen_at(const char *path)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	strncpy(sa.sun_path, path, sizeof sa.sun_path - 1);
	unlink(path);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof sa) < 0 || listen(fd, 16) < 0) {
		int e = errno;
		if (fd >= 0)
			close(fd);
		errno = e;
		return -1;
	}
	return fd;
}

void daemon_open(struct daemon *d)
{
	memset(d, 0, sizeof *d);
	d->conn = -1;
	if (inherited(SBX_LISTEN_FD)) {
		d->listener = SBX_LISTEN_FD;
		d->inherited = true;
		return;
	}
	if ((d->listener = listen_at(SBX_LISTEN_PATH)) < 0) {
		sbx_log("listen at %s: %s", SBX_LISTEN_PATH, strerror(errno));
		exit(1);
	}
}

int daemon_accept(struct daemon *d)
{
	for (;;) {
		int fd = accept4(d->listener, NULL, NULL, SOCK_CLOEXEC);
		if (fd >= 0) {
			d->conn = fd;
			linebuf_reset(&d->rd);
			return fd;
		}
		if (errno != EINTR && errno != ECONNABORTED)
			return -1;
	}
}

void daemon_send(struct daemon *d, json_t *msg)
{
	if (!d || d->conn < 0)
		return;
	size_t n = json_dumpb(msg, NULL, 0, JSON_COMPACT);
	char *buf = malloc(n + 1);
	if (!buf)
		abort();
	json_dumpb(msg, buf, n, JSON_COMPACT);
	buf[n] = '\n';
	/* The daemon went away: finish the work, answer the next one. */
	if (write_all(d->conn, buf, n + 1) < 0)
		daemon_hang_up(d);
	free(buf);
}

void daemon_error(struct daemon *d, const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	json_t *m = json_pack("{s:s, s:s}", "type", SBX_TYPE_ERROR, "message", buf);
	if (m) {
		daemon_send(d, m);
		json_decref(m);
	}
}

void daemon_hang_up(struct daemon *d)
{
	if (d->conn >= 0)
		close(d->conn);
	d->conn = -1;
	linebuf_reset(&d->rd);
}

int daemon_watched(struct daemon *d, const char *exec_id)
{
	return exec_id && d->conn >= 0 ? d->conn : -1;
}

/* daemon_read reads what the daemon sent while execution exec_id runs (NULL:
 * one of the agent's own, which nothing interrupts), once its socket is
 * readable, or with fill false only the lines read already: returns
 * whether it asked to interrupt the execution. Any other request but a
 * reclaim is answered with an error: the daemon sends one at a time. */
bool daemon_read(struct daemon *d, const char *exec_id, bool fill)
{
	if (!exec_id || d->conn < 0)
		return false;
	int more = 1;
	if (fill)
		more = linebuf_fill(&d->rd, d->conn);
	bool interrupt = false;
	char *line;
	size_t n;
	while (d->conn >= 0 && (line = linebuf_take(&d->rd, &n)) != NULL) {
		json_t *req = parse_line(line, n);
		free(line);
		if (!req) {
			daemon_error(d, "bad request line");
			continue;
		}
		const char *op = str_of(req, "op", "");
		if (strcmp(op, SBX_OP_INTERRUPT) == 0)
			interrupt = interrupt || strcmp(str_of(req, "id", ""), exec_id) == 0;
		else if (strcmp(op, SBX_OP_RECLAIM) == 0)
			kill_largest();
		else
			daemon_error(d, "op '%s' while an execution runs", op);
		json_decref(req);
	}
	if (more <= 0)
		daemon_hang_up(d);
	return interrupt;
}
