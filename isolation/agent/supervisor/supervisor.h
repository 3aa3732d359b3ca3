/*
 * sandboxd-supervisor: the native supervisor of a sandbox (issue 34's "one
 * interpreter per session"). It is PID 1 of the sandbox, as the Python
 * supervisor (_sandboxd_agent.py) is, and speaks the same protocol to the
 * daemon, line for line; the worker interpreter that runs cells is the
 * same module (_sandboxd_worker), exec'd rather than forked from a Python
 * supervisor, so that a session holds one interpreter, not two.
 *
 * Files, one job each:
 *   main.c     the entry: PID 1's signals, the listener, the requests
 *   wire.c     lines and JSON, each way; the log
 *   procs.c    children: the reaper, the kills, the sandbox's processes
 *   answer.c   an execution's answer: output captured and bounded
 *   cells.c    a worker: its start, its stop, its fork, a cell's run
 *   contexts.c contexts, their workers, undo checkpoints
 *   shell.c    shell executions
 *   spawn.c    processes the daemon starts beside the interpreter
 *   quiesce.c  a checkpoint under gVisor
 * consts.h is generated from the daemon's Go constants (consts.go).
 */
#ifndef SANDBOXD_SUPERVISOR_H
#define SANDBOXD_SUPERVISOR_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "consts.h"

/* The worker's control pipes, then copies of its fds 1 and 2, then its
 * fork channel: where _sandboxd_worker expects them (CTRL_FD_BASE). */
#define CTRL_FD_BASE 710
#define FORK_FD (CTRL_FD_BASE + 4)
#define READ_CHUNK 65536

/* wire.c */
struct linebuf {
	char *buf;
	size_t len, cap;
	size_t scan; /* where the search for the next newline resumes */
};
int linebuf_fill(struct linebuf *lb, int fd); /* 1 read, 0 end of file, -1 error (EAGAIN: 1) */
char *linebuf_take(struct linebuf *lb, size_t *n); /* the next line (malloc'd, NUL-ended) or NULL */
void linebuf_reset(struct linebuf *lb);
void sbx_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_errno(const char *what, const char *path);
double monotonic(void);
json_t *parse_line(const char *line, size_t n);
const char *str_of(json_t *obj, const char *key, const char *def);
double num_of(json_t *obj, const char *key, double def);
long long int_of(json_t *obj, const char *key, long long def);
int write_all(int fd, const char *data, size_t n);
int poll_ms(double wait); /* a poll timeout for wait seconds, bounded */

struct daemon {
	int listener;
	bool inherited;
	int conn; /* -1: none */
	struct linebuf rd;
};
int listen_at(const char *path);
void daemon_open(struct daemon *d);
int daemon_accept(struct daemon *d);
void daemon_send(struct daemon *d, json_t *msg); /* msg is not stolen */
void daemon_hang_up(struct daemon *d);
void daemon_error(struct daemon *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
bool daemon_read(struct daemon *d, const char *exec_id, bool fill);
int daemon_watched(struct daemon *d, const char *exec_id); /* the fd to poll, or -1 */

/* procs.c */
void reaper_start(void);
int reaper_fd(void);
enum { REAPED_MAIN, REAPED_SPAWNER };
int reaped_fd(int thread); /* readable once a status was kept since reaped_clear */
void reaped_clear(int thread);
void reap_zombies(void);
void watch(pid_t pid);
pid_t fork_watched(void);
pid_t fork_child(void);
void unwatch(pid_t pid);
bool child_status(pid_t pid, int *status);
bool exited_status(pid_t pid, int *status);
bool reap(pid_t pid, double limit, int *status);
void reap_all(double limit);
bool kill_all(void);
void signal_group(pid_t pgid, int sig);
void wait_group_gone(pid_t pgid, double limit);
struct snapshot;
struct snapshot *snapshot_take(struct snapshot *prev);
void kill_new(struct snapshot *before, const pid_t *spare, size_t nspare, double limit);
pid_t kill_largest(void);
void raise_oom_score(void);

/* answer.c */
struct budget {
	long long left;
	bool cut;
};
struct capture {
	const char *kind;
	struct daemon *d; /* NULL: output is dropped (the agent's own cells) */
	long long limit, sent;
	bool truncated;
	unsigned char pend[4];
	int npend;
	struct budget *b;
};
void budget_init(struct budget *b, long long n);
json_t *budget_text(struct budget *b, const char *s, size_t n);
json_t *budget_error(struct budget *b, json_t *e);
json_t *budget_outputs(struct budget *b, json_t *outs);
json_t *budget_output(struct budget *b, json_t *o);
void capture_init(struct capture *c, const char *kind, struct daemon *d, long long limit, struct budget *b);
void capture_feed(struct capture *c, const unsigned char *data, size_t n);
void capture_finish(struct capture *c);
bool drain(int fd, struct capture *c); /* false at end of file */
void discard(int fd);
size_t utf8_valid_prefix(const unsigned char *s, size_t n, size_t *bad);
json_t *done_new(void);
#define STOPPED_EXIT_CODE(status) (strcmp((status), SBX_STATUS_TIMEOUT) == 0 ? 124 : 130)

/* cells.c */
struct worker {
	pid_t pid;
	int out, err, ctrl_r, ctrl_w, chan;
	struct linebuf ctrl;
	long long seq;
	int stray;
	bool reseed;
	char *cwd;  /* where it starts (a context's folder), or NULL */
	char *node; /* the node binary of a JavaScript context's worker, or NULL */
};
/* A context: its worker (pid 0: none running) and the copies of it that
 * undo checkpoints parked, oldest first. */
struct context {
	char *name;
	bool has; /* the context exists (the default one always does) */
	struct worker w;
	struct worker *parked;
	size_t nparked;
};
struct agent {
	struct daemon d;
	struct context *ctx; /* ctx[0] is the default context */
	size_t nctx;
	const char *python, *dir, *preload;
	json_t *undelivered;
	json_t *preload_error;
	bool preloading;
	struct snapshot *before;
};
void worker_init(struct worker *w, const char *cwd, const char *node);
int worker_start(struct agent *a, struct worker *w);
void worker_stop(struct worker *w, bool alone);
void worker_free(struct worker *w);
bool worker_exited(struct worker *w);
int worker_fork(struct worker *src, const char *cwd, struct worker *copy, char *why, size_t whylen);
void agent_restart(struct agent *a, struct worker *w, bool alone);
void agent_preload(struct agent *a, struct worker *w);
json_t *cell_execute(struct agent *a, struct worker *w, json_t *req, struct daemon *out, const char *exec_id, double start);

/* contexts.c */
struct worker *default_worker(struct agent *a);
bool agent_alone(struct agent *a);
size_t worker_pids(struct agent *a, pid_t **pids);
json_t *execute_cell(struct agent *a, json_t *req, const char *language, const char *exec_id, double start);
void handle_context(struct agent *a, json_t *req);
void handle_undo(struct agent *a, json_t *req);
void reseed_all(struct agent *a);

/* spawn.c */
void spawner_start(bool inherited);
int spawner_running(void);
void spawner_pause(void);
bool spawner_resume(void);

/* quiesce.c */
bool quiesce(struct agent *a);

/* shell.c */
json_t *shell_execute(struct agent *a, json_t *req, const char *exec_id);

#endif
