/*
 * The supervisor's processes. As PID 1 of the sandbox it inherits every
 * orphan, and a zombie counts against the sandbox's pids limit until it is
 * reaped: SIGCHLD comes on a signalfd that every wait of the supervisor
 * polls, and the reaper keeps the wait status of the children it watches
 * (the worker, a shell command) for the code that waits for them. Nothing
 * else calls waitpid(-1).
 *
 * An execution stopped by its timeout or an interrupt stops with everything
 * it started: the supervisor notes the sandbox's processes (pid and start
 * time) while idle and, once it stopped one, kills every process that was
 * not there (kill_new), as _sandboxd_procs does.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <pthread.h>
#include <sys/eventfd.h>
#include <fcntl.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <time.h>
#include <stdint.h>
#include <unistd.h>

#include "supervisor.h"

/* The children whose wait status the supervisor wants: workers (and their
 * parked copies), shell commands, spawned processes. */
static struct watched {
	pid_t pid;
	bool exited;
	int status;
} *watched;
static size_t nwatched;
static int sigfd = -1;
/* lock is held over the table and every waitpid: the spawner's thread
 * (spawn.c) reaps, watches and forks too. Both threads poll SIGCHLD's
 * signalfd, and one read of it takes the signal from the other: reaped
 * holds an eventfd for each (REAPED_MAIN, REAPED_SPAWNER), written at every
 * status kept, so that a thread waiting for a child's end (a shell
 * command's, a process of the daemon's) wakes whichever thread reaped it. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int reaped[2] = {-1, -1};

int reaped_fd(int thread)
{
	return reaped[thread];
}

void reaped_clear(int thread)
{
	uint64_t v;
	(void)!read(reaped[thread], &v, sizeof v);
}

void reaper_start(void)
{
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	sigprocmask(SIG_BLOCK, &set, NULL);
	sigfd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
	reaped[REAPED_MAIN] = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	reaped[REAPED_SPAWNER] = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	reap_zombies();
}

int reaper_fd(void)
{
	return sigfd;
}

static long slot_of(pid_t pid)
{
	for (size_t i = 0; i < nwatched; i++)
		if (watched[i].pid == pid)
			return i;
	return -1;
}

static void keep(pid_t pid, int status)
{
	long i = slot_of(pid);
	if (i >= 0) {
		watched[i].exited = true;
		watched[i].status = status;
		uint64_t one = 1;
		(void)!write(reaped[REAPED_MAIN], &one, sizeof one);
		(void)!write(reaped[REAPED_SPAWNER], &one, sizeof one);
	}
}

void reap_zombies(void)
{
	struct signalfd_siginfo si;
	while (sigfd >= 0 && read(sigfd, &si, sizeof si) == sizeof si)
		;
	pthread_mutex_lock(&lock);
	for (;;) {
		int st;
		pid_t p = waitpid(-1, &st, WNOHANG);
		if (p < 0 && errno == EINTR)
			continue;
		if (p <= 0)
			break;
		keep(p, st);
	}
	pthread_mutex_unlock(&lock);
}

static void watch_locked(pid_t pid);

void watch(pid_t pid)
{
	pthread_mutex_lock(&lock);
	watch_locked(pid);
	pthread_mutex_unlock(&lock);
}

/* fork_watched forks, and in the parent watches the child before any
 * reaper can take it: a command that exits at once keeps its status. The
 * child must call only async-signal-safe functions until it execs. */
pid_t fork_watched(void)
{
	pthread_mutex_lock(&lock);
	pid_t pid = fork();
	if (pid == 0)
		return 0; /* its copy of the lock is never used */
	if (pid > 0)
		watch_locked(pid);
	pthread_mutex_unlock(&lock);
	return pid;
}

/* fork_child is fork_watched for a child that execs a program of its own
 * (a worker, a command, a process of the daemon's): in it, the signals
 * the supervisor blocks are unblocked, SIGPIPE is back to its default, and
 * it leads a session of its own (a stop kills its group). Only
 * async-signal-safe calls may follow in the child until its exec: another
 * thread may hold any lock. */
pid_t fork_child(void)
{
	pid_t pid = fork_watched();
	if (pid == 0) {
		sigset_t none;
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		signal(SIGPIPE, SIG_DFL);
		setsid();
	}
	return pid;
}

static void watch_locked(pid_t pid)
{
	long i = slot_of(0);
	if (i < 0) {
		struct watched *more = realloc(watched, (nwatched + 16) * sizeof *watched);
		if (!more)
			abort();
		watched = more;
		memset(watched + nwatched, 0, 16 * sizeof *watched);
		i = nwatched;
		nwatched += 16;
	}
	watched[i].pid = pid;
	watched[i].exited = false;
}

void unwatch(pid_t pid)
{
	pthread_mutex_lock(&lock);
	long i = slot_of(pid);
	if (i >= 0)
		watched[i].pid = 0;
	pthread_mutex_unlock(&lock);
}

/* exited_status is pid's wait status if the reaper has kept it. A worker
 * forked from another is that one's child until it ends: only the reaper
 * (once it is the supervisor's) knows of its end, not a waitpid(pid). */
bool exited_status(pid_t pid, int *status)
{
	pthread_mutex_lock(&lock);
	long i = slot_of(pid);
	bool exited = i >= 0 && watched[i].exited;
	if (exited)
		*status = watched[i].status;
	pthread_mutex_unlock(&lock);
	return exited;
}

bool child_status(pid_t pid, int *status)
{
	if (exited_status(pid, status))
		return true;
	pthread_mutex_lock(&lock);
	int st;
	bool exited = true;
	pid_t p = waitpid(pid, &st, WNOHANG);
	if (p < 0) {
		/* Not a child (any more): gone, or the reaper took it
		 * meanwhile and kept its status. */
		long i = slot_of(pid);
		st = i >= 0 && watched[i].exited ? watched[i].status : 0;
	} else if (p != pid) {
		exited = false;
	} else {
		keep(pid, st);
	}
	pthread_mutex_unlock(&lock);
	if (exited)
		*status = st;
	return exited;
}

static void nap(double s)
{
	struct timespec ts = {(time_t)s, (long)((s - (time_t)s) * 1e9)};
	nanosleep(&ts, NULL);
}

bool reap(pid_t pid, double limit, int *status)
{
	double deadline = monotonic() + limit;
	for (;;) {
		if (child_status(pid, status))
			return true;
		if (monotonic() >= deadline)
			return false;
		nap(0.005);
	}
}

void reap_all(double limit)
{
	double deadline = monotonic() + limit;
	while (monotonic() < deadline) {
		int st;
		pthread_mutex_lock(&lock);
		pid_t p = waitpid(-1, &st, WNOHANG);
		int e = errno;
		if (p > 0)
			keep(p, st);
		pthread_mutex_unlock(&lock);
		if (p < 0 && e == ECHILD)
			return;
		if (p <= 0)
			nap(0.002);
	}
}

/* kill_all kills every process of the sandbox but PID 1; returns whether it
 * did. As PID 1 of the sandbox's pid namespace, kill(-1) reaches every other
 * process in it and none outside. Anywhere else kill(-1) would reach every
 * process of the uid, or of the whole host for root: it is refused. */
bool kill_all(void)
{
	if (getpid() != 1) {
		sbx_log("not PID 1 of a pid namespace: refusing to kill every process (kill(-1))");
		return false;
	}
	kill(-1, SIGKILL);
	return true;
}

void signal_group(pid_t pgid, int sig)
{
	if (pgid > 0)
		killpg(pgid, sig);
}

void wait_group_gone(pid_t pgid, double limit)
{
	double deadline = monotonic() + limit;
	while (monotonic() < deadline) {
		reap_zombies();
		if (killpg(pgid, 0) < 0)
			return;
		nap(0.002);
	}
}

/* A process's state letter and start time (field 22 of its stat). */
static bool stat_of(pid_t pid, char *state, unsigned long long *start)
{
	char path[64], buf[1024];
	snprintf(path, sizeof path, "/proc/%d/stat", pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return false;
	size_t n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[n] = 0;
	/* The command name may hold spaces and parentheses: the fields that
	 * follow start after the last ")". */
	char *p = strrchr(buf, ')');
	if (!p || p[1] == 0)
		return false;
	p += 2;
	*state = *p;
	for (int field = 3; field < 22; field++) {
		p = strchr(p, ' ');
		if (!p)
			return false;
		p++;
	}
	*start = strtoull(p, NULL, 10);
	return true;
}

struct snapshot {
	size_t n, cap;
	struct proc {
		pid_t pid;
		unsigned long long start;
	} *procs;
};

static unsigned long long *start_in(struct snapshot *s, pid_t pid)
{
	for (size_t i = 0; s && i < s->n; i++)
		if (s->procs[i].pid == pid)
			return &s->procs[i].start;
	return NULL;
}

/* snapshot_take notes the sandbox's processes, for kill_new; NULL when this
 * is not PID 1 of a pid namespace (/proc would show the host's, which are
 * not the supervisor's to kill). prev, an earlier snapshot (freed here),
 * spares reading the stat of every process it has. */
struct snapshot *snapshot_take(struct snapshot *prev)
{
	if (getpid() != 1) {
		free(prev ? prev->procs : NULL);
		free(prev);
		return NULL;
	}
	struct snapshot *s = calloc(1, sizeof *s);
	DIR *dir = opendir("/proc");
	struct dirent *e;
	while (s && dir && (e = readdir(dir)) != NULL) {
		char *end;
		long pid = strtol(e->d_name, &end, 10);
		if (*end || pid <= 0)
			continue;
		unsigned long long *had = start_in(prev, pid), start;
		char state;
		if (had)
			start = *had;
		else if (!stat_of(pid, &state, &start))
			continue;
		if (s->n == s->cap) {
			s->cap = s->cap ? s->cap * 2 : 32;
			s->procs = realloc(s->procs, s->cap * sizeof *s->procs);
			if (!s->procs)
				abort();
		}
		s->procs[s->n++] = (struct proc){pid, start};
	}
	if (dir)
		closedir(dir);
	if (prev) {
		free(prev->procs);
		free(prev);
	}
	return s;
}

/* signal_new sends sig to every live process that started since before, but
 * PID 1, those in spare and, when sent is given, those in it (which it adds
 * to); returns whether it sent any. */
static bool signal_new(struct snapshot *before, const pid_t *spare, size_t nspare, int sig, struct snapshot *sent)
{
	bool any = false;
	DIR *dir = opendir("/proc");
	struct dirent *e;
	while (dir && (e = readdir(dir)) != NULL) {
		char *end;
		long pid = strtol(e->d_name, &end, 10);
		if (*end || pid <= 1)
			continue;
		bool spared = false;
		for (size_t i = 0; i < nspare; i++)
			spared = spared || spare[i] == pid;
		char state;
		unsigned long long start;
		if (spared || !stat_of(pid, &state, &start) || state == 'Z')
			continue;
		unsigned long long *had = start_in(before, pid);
		if (had && *had == start)
			continue;
		if (sent) {
			unsigned long long *was = start_in(sent, pid);
			if (was && *was == start)
				continue;
			if (sent->n == sent->cap) {
				sent->cap = sent->cap ? sent->cap * 2 : 32;
				sent->procs = realloc(sent->procs, sent->cap * sizeof *sent->procs);
				if (!sent->procs)
					abort();
			}
			sent->procs[sent->n++] = (struct proc){pid, start};
		}
		if (kill(pid, sig) == 0)
			any = true;
	}
	if (dir)
		closedir(dir);
	return any;
}

/* kill_new kills every process that started since before, but those in
 * spare: it stops them first (a fork bomb forks no more once stopped, and
 * keeps its pid), then kills them, within limit. */
void kill_new(struct snapshot *before, const pid_t *spare, size_t nspare, double limit)
{
	if (!before)
		return;
	double deadline = monotonic() + limit;
	struct snapshot stopped = {0};
	while (signal_new(before, spare, nspare, SIGSTOP, &stopped) && monotonic() < deadline)
		reap_zombies();
	free(stopped.procs);
	while (signal_new(before, spare, nspare, SIGKILL, NULL) && monotonic() < deadline) {
		nap(0.002);
		reap_zombies();
	}
}

/* kill_largest kills the sandbox's process with the most resident memory,
 * but PID 1, as the kernel's OOM killer would pick it (the daemon's reclaim,
 * where no kernel does it: gVisor). */
pid_t kill_largest(void)
{
	if (getpid() != 1)
		return 0;
	pid_t best = 0;
	long long most = -1;
	DIR *dir = opendir("/proc");
	struct dirent *e;
	while (dir && (e = readdir(dir)) != NULL) {
		char *end, path[64];
		long pid = strtol(e->d_name, &end, 10);
		if (*end || pid <= 1)
			continue;
		snprintf(path, sizeof path, "/proc/%ld/statm", pid);
		FILE *f = fopen(path, "re");
		long long size, rss;
		if (!f)
			continue;
		if (fscanf(f, "%lld %lld", &size, &rss) == 2 && rss > most) {
			best = pid;
			most = rss;
		}
		fclose(f);
	}
	if (dir)
		closedir(dir);
	if (best > 0) {
		if (kill(best, SIGKILL) < 0)
			return 0;
		sbx_log("memory limit reached: killed pid %d (%lld KiB resident)", best, most * sysconf(_SC_PAGESIZE) / 1024);
	}
	return best;
}

/* raise_oom_score makes this process (a worker, a command: the
 * supervisor's children) the OOM killer's first choice; safe in a forked
 * child. */
void raise_oom_score(void)
{
	int fd = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
	if (fd >= 0) {
		(void)!write(fd, "1000", 4);
		close(fd);
	}
}
