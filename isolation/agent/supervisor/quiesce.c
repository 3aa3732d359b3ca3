/*
 * A checkpoint under gVisor (protocol 18), as _sandboxd_quiesce.py readies
 * one: gVisor saves no socket bound on the host, so the supervisor answers
 * the daemon's quiesce, closes its connection and listeners, waits for
 * the checkpoint (a read of SBX_CHECKPOINT_PATH opened before it), and
 * listens again, in the sandbox and in every copy restored from it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "supervisor.h"

/* checkpoint_wait is what the checkpoint said, once it is done ("resume",
 * "restore", "error"), or "error" after SBX_QUIESCE_WAIT. */
static void checkpoint_wait(int fd, char *out, size_t n)
{
	struct pollfd p = {fd, POLLIN, 0};
	snprintf(out, n, "error");
	if (poll(&p, 1, SBX_QUIESCE_WAIT * 1000) <= 0)
		return;
	ssize_t k = read(fd, out, n - 1);
	if (k <= 0) {
		snprintf(out, n, "error");
		return;
	}
	out[k] = 0;
	while (k > 0 && (out[k - 1] == '\n' || out[k - 1] == ' '))
		out[--k] = 0;
	if (k == 0)
		snprintf(out, n, "error");
}

/* relisten listens again at SBX_LISTEN_PATH and SBX_SPAWN_PATH. The folder
 * is the host's; should the bind fail (it should not), the supervisor
 * keeps trying a while rather than end the sandbox. */
static void relisten(struct daemon *d)
{
	for (int attempt = 0; attempt < 50; attempt++) {
		if (d->listener < 0)
			d->listener = listen_at(SBX_LISTEN_PATH);
		if (d->listener >= 0 && spawner_resume())
			return;
		if (attempt == 0)
			sbx_log("listen again: %s", strerror(errno));
		struct timespec ts = {0, 100 * 1000 * 1000};
		nanosleep(&ts, NULL);
	}
	sbx_log("the agent could not listen again after a checkpoint");
}

/* quiesce answers the daemon's quiesce, waits out the checkpoint, and
 * listens again; returns whether a copy restored from the checkpoint runs
 * (its interpreters then reseed). */
bool quiesce(struct agent *a)
{
	struct daemon *d = &a->d;
	if (d->inherited) {
		daemon_error(d, "this sandbox does not run on gVisor: it has no memory to checkpoint");
		return false;
	}
	int running = spawner_running();
	if (running) {
		daemon_error(d, "%d process(es) started beside the interpreter (a terminal or a command) still run: their "
				"input and output are the host's, which a checkpoint cannot hold; end them first", running);
		return false;
	}
	/* Opened before the checkpoint: the read waits for the next one. */
	int fd = open(SBX_CHECKPOINT_PATH, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		daemon_error(d, "this gVisor cannot checkpoint from inside (%s): %s", SBX_CHECKPOINT_PATH, strerror(errno));
		return false;
	}
	/* Every socket of the host's closes before the daemon, which reads the
	 * connection to its end, checkpoints. */
	spawner_pause();
	close(d->listener);
	d->listener = -1;
	if (unlink(SBX_LISTEN_PATH) < 0)
		sbx_log("unlink %s: %s", SBX_LISTEN_PATH, strerror(errno));
	json_t *m = json_pack("{s:s}", "type", SBX_TYPE_QUIET);
	daemon_send(d, m);
	json_decref(m);
	daemon_hang_up(d);
	char result[64];
	checkpoint_wait(fd, result, sizeof result);
	close(fd);
	relisten(d);
	sbx_log("checkpoint: %s", result);
	return strcmp(result, "restore") == 0;
}
