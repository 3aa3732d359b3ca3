/*
 * Shell executions. A command runs as `/bin/sh -c` in a session of its own,
 * a child of the supervisor (not of the worker: its state is not the
 * cells'), with the request's environment and working folder; the
 * supervisor relays its output, enforces the timeout (the kill at once)
 * and the daemon's interrupts (SIGINT, again after COMMAND_RESIGNAL, the
 * kill after the grace), and kills what it started once it stopped. The
 * rules are _sandboxd_shell.py's; the command's end wakes the supervisor
 * (SIGCHLD on the reaper's signalfd) rather than a poll.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "supervisor.h"

#define COMMAND_RESIGNAL 1.0

extern char **environ;

/* env_of is the supervisor's environment with the request's on top. */
static char **env_of(json_t *env)
{
	size_t n = 0;
	while (environ[n])
		n++;
	char **out = calloc(n + json_object_size(env) + 1, sizeof *out);
	size_t k = 0;
	const char *key;
	json_t *v;
	for (size_t i = 0; i < n; i++) {
		const char *eq = strchr(environ[i], '=');
		bool replaced = false;
		if (eq && json_is_object(env))
			json_object_foreach(env, key, v) {
				if (strlen(key) == (size_t)(eq - environ[i]) && strncmp(key, environ[i], eq - environ[i]) == 0)
					replaced = true;
			}
		if (!replaced)
			out[k++] = environ[i];
	}
	if (json_is_object(env))
		json_object_foreach(env, key, v) {
			char *s = NULL;
			if (json_is_string(v))
				s = strdup(json_string_value(v));
			else
				s = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
			char *kv;
			if (s && asprintf(&kv, "%s=%s", key, s) >= 0)
				out[k++] = kv;
			free(s);
		}
	return out;
}

json_t *shell_execute(struct agent *a, json_t *req, const char *exec_id)
{
	long long limit = int_of(req, "max_output", 1 << 20);
	double timeout = num_of(req, "timeout", 30), grace = num_of(req, "grace", 1.0);
	struct budget budget;
	budget_init(&budget, int_of(req, "max_answer", 0) ? int_of(req, "max_answer", 0) : 4 << 20);
	json_t *done = done_new();
	json_t *code = json_object_get(req, "code");
	const char *cmd = json_is_string(code) ? json_string_value(code) : "";
	const char *cwd = str_of(req, "cwd", "");
	if (json_is_string(code) && strlen(cmd) != json_string_length(code)) {
		/* A NUL the daemon let through: the command's error, never the
		 * agent's end. */
		json_t *m = json_pack("{s:s, s:s}", "type", SBX_TYPE_STDERR, "data", "sh: embedded null byte\n");
		daemon_send(&a->d, m);
		json_decref(m);
		json_object_set_new(done, "status", json_string(SBX_STATUS_ERROR));
		json_object_set_new(done, "exit_code", json_integer(127));
		return done;
	}
	int out[2], err[2];
	if (pipe2(out, O_CLOEXEC) < 0) {
		json_object_set_new(done, "status", json_string(SBX_STATUS_ERROR));
		json_object_set_new(done, "exit_code", json_integer(127));
		return done;
	}
	if (pipe2(err, O_CLOEXEC) < 0) {
		close(out[0]);
		close(out[1]);
		json_object_set_new(done, "status", json_string(SBX_STATUS_ERROR));
		json_object_set_new(done, "exit_code", json_integer(127));
		return done;
	}
	char **envp = env_of(json_object_get(req, "env"));
	pid_t pid = fork_child();
	if (pid == 0) {
		int null = open("/dev/null", O_RDONLY);
		dup2(null, 0);
		dup2(out[1], 1);
		dup2(err[1], 2);
		if (*cwd && chdir(cwd) < 0) {
			/* Worded as the Python supervisor's (Python's OSError),
			 * with write alone: safe in a forked child. */
			char num[16];
			int e = errno, k = sizeof num;
			num[--k] = 0;
			do
				num[--k] = '0' + e % 10;
			while ((e /= 10) > 0 && k > 0);
			const char *why = strerrordesc_np(errno);
			const char *parts[] = {"sh: [Errno ", num + k, "] ", why ? why : "error", ": '", cwd, "'\n"};
			for (size_t i = 0; i < sizeof parts / sizeof *parts; i++)
				(void)!write(2, parts[i], strlen(parts[i]));
			_exit(127);
		}
		raise_oom_score();
		execle("/bin/sh", "/bin/sh", "-c", cmd, (char *)NULL, envp);
		log_errno("exec", "/bin/sh");
		_exit(127);
	}
	close(out[1]);
	close(err[1]);
	/* Only the strings made here: the rest are the environment's. */
	for (size_t i = 0; envp[i]; i++) {
		bool ours = true;
		for (size_t j = 0; environ[j] && ours; j++)
			ours = envp[i] != environ[j];
		if (ours)
			free(envp[i]);
	}
	free(envp);
	if (pid < 0) {
		close(out[0]);
		close(err[0]);
		char msg[256];
		snprintf(msg, sizeof msg, "sh: %s\n", strerror(errno));
		json_t *m = json_pack("{s:s, s:s}", "type", SBX_TYPE_STDERR, "data", msg);
		daemon_send(&a->d, m);
		json_decref(m);
		json_object_set_new(done, "status", json_string(SBX_STATUS_ERROR));
		json_object_set_new(done, "exit_code", json_integer(127));
		return done;
	}
	fcntl(out[0], F_SETFL, O_NONBLOCK);
	fcntl(err[0], F_SETFL, O_NONBLOCK);
	struct capture caps[2];
	capture_init(&caps[0], SBX_TYPE_STDOUT, &a->d, limit, &budget);
	capture_init(&caps[1], SBX_TYPE_STDERR, &a->d, limit, &budget);
	bool out_open = true, err_open = true;
	double deadline = monotonic() + timeout, kill_at = -1, resignal_at = -1;
	const char *stopping = NULL;
	bool killed = false;
	int status = 0;
	bool have = false;
	bool interrupt = daemon_read(&a->d, exec_id, false);
	pid_t *spare;
	size_t nspare = worker_pids(a, &spare);
	for (;;) {
		if (child_status(pid, &status)) {
			have = true;
			break;
		}
		double now = monotonic();
		if (!stopping && interrupt) {
			stopping = SBX_STATUS_INTERRUPTED;
			kill_at = now + grace;
			signal_group(pid, SIGINT);
			resignal_at = now + COMMAND_RESIGNAL;
		} else if (resignal_at >= 0 && now >= resignal_at) {
			signal_group(pid, SIGINT);
			resignal_at = -1;
		} else if (!stopping && now >= deadline) {
			stopping = SBX_STATUS_TIMEOUT;
			kill_at = now;
		}
		if (kill_at >= 0 && now >= kill_at) {
			signal_group(pid, SIGKILL);
			/* Now, not after the wait: what left the group may be a
			 * fork bomb's, which would fill the pids limit meanwhile. */
			kill_new(a->before, spare, nspare, 2.0);
			have = reap(pid, 5.0, &status);
			wait_group_gone(pid, 2.0);
			killed = true;
			break;
		}
		double wait = (kill_at >= 0 ? kill_at : deadline) - now;
		if (resignal_at >= 0 && resignal_at - now < wait)
			wait = resignal_at - now;
		/* The command's end wakes this loop: SIGCHLD, or the spawner's
		 * thread having reaped it (then the signal is gone). */
		struct pollfd p[5];
		int np = 0, iout = -1, ierr = -1, idaemon = -1;
		p[np++] = (struct pollfd){reaper_fd(), POLLIN, 0};
		p[np++] = (struct pollfd){reaped_fd(REAPED_MAIN), POLLIN, 0};
		if (out_open) {
			iout = np;
			p[np++] = (struct pollfd){out[0], POLLIN, 0};
		}
		if (err_open) {
			ierr = np;
			p[np++] = (struct pollfd){err[0], POLLIN, 0};
		}
		int dfd = daemon_watched(&a->d, exec_id);
		if (dfd >= 0) {
			idaemon = np;
			p[np++] = (struct pollfd){dfd, POLLIN, 0};
		}
		if (poll(p, np, poll_ms(wait)) < 0)
			continue;
		if (p[0].revents)
			reap_zombies();
		if (p[1].revents)
			reaped_clear(REAPED_MAIN);
		if (idaemon >= 0 && p[idaemon].revents)
			interrupt = daemon_read(&a->d, exec_id, true) || interrupt;
		if (iout >= 0 && p[iout].revents && !drain(out[0], &caps[0]))
			out_open = false;
		if (ierr >= 0 && p[ierr].revents && !drain(err[0], &caps[1]))
			err_open = false;
	}
	if (stopping && !killed)
		kill_new(a->before, spare, nspare, 2.0);
	free(spare);
	unwatch(pid);
	drain(out[0], &caps[0]);
	drain(err[0], &caps[1]);
	capture_finish(&caps[0]);
	capture_finish(&caps[1]);
	close(out[0]);
	close(err[0]);
	json_object_set_new(done, "truncated", json_boolean(caps[0].truncated || caps[1].truncated || budget.cut));
	int rc = !have ? 1 : WIFEXITED(status) ? WEXITSTATUS(status) : WIFSIGNALED(status) ? -WTERMSIG(status) : 1;
	if (stopping) {
		json_object_set_new(done, "status", json_string(stopping));
		json_object_set_new(done, "exit_code", json_integer(STOPPED_EXIT_CODE(stopping)));
	} else if (rc < 0) {
		json_object_set_new(done, "status", json_string(rc == -SIGKILL ? SBX_STATUS_KILLED : SBX_STATUS_ERROR));
		json_object_set_new(done, "exit_code", json_integer(128 - rc));
	} else if (rc != 0) {
		json_object_set_new(done, "status", json_string(SBX_STATUS_ERROR));
		json_object_set_new(done, "exit_code", json_integer(rc));
	}
	return done;
}
