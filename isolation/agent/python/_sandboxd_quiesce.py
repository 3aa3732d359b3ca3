# sandboxd agent: quiet for gVisor's checkpoint (protocol 18), in the
# supervisor. gVisor saves no socket bound on the host, and the agent's
# listeners (LISTEN_PATH, SPAWN_PATH) and the daemon's connection are
# such sockets: the daemon asks the agent to close them before it runs
# `runsc checkpoint`, and the agent listens again once the checkpoint is
# done. gVisor's CHECKPOINT_PATH says when: a read of it blocks until the
# sandbox's next checkpoint has ended, then gives "resume" (this sandbox
# goes on), "restore" (this is a copy restored from the image) or
# "error". A copy restored from the image listens in its own folder (the
# new sandbox's, bound at the same path) and reseeds its interpreters'
# random generators: copies must not draw the same numbers.
#   -> {"op":"quiesce"}
#   <- {"type":"quiet"}  then the connection closes; or an error line
# Refused while a process the daemon started runs (its stdio are the
# host's descriptors, which gVisor cannot save either), and where the
# listener was inherited (runc: no gVisor to checkpoint). A daemon that
# never checkpoints leaves the agent waiting QUIESCE_WAIT, then it
# listens again as if the checkpoint had failed.
import os
import select

from _sandboxd_consts import CHECKPOINT_PATH, LISTEN_PATH, QUIESCE_WAIT, TYPE_ERROR, TYPE_QUIET
from _sandboxd_daemon import listen_at
from _sandboxd_wire import log

import _sandboxd_spawn as spawn


def quiesce(agent):
    """Answers the daemon's quiesce, waits out the checkpoint, and listens
    again; returns what the checkpoint said ("resume", "restore",
    "error"), or None if the agent refused (and answered why)."""
    d = agent.daemon
    if d.inherited:
        d.send({"type": TYPE_ERROR, "message": "this sandbox does not run on gVisor: it has no memory to checkpoint"})
        return None
    running = spawn.running()
    if running:
        d.send({"type": TYPE_ERROR, "message": "%d process(es) started beside the interpreter (a terminal or a "
                "command) still run: their input and output are the host's, which a checkpoint cannot hold; "
                "end them first" % running})
        return None
    try:
        # Opened before the checkpoint: the read waits for the next one.
        fd = os.open(CHECKPOINT_PATH, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as e:
        d.send({"type": TYPE_ERROR, "message": "this gVisor cannot checkpoint from inside (%s): %s" % (CHECKPOINT_PATH, e)})
        return None
    try:
        # Every socket of the host's closes before the daemon, which reads
        # the connection to its end, checkpoints.
        spawn.pause()
        d.listener.close()
        d.listener = None
        unlink(LISTEN_PATH)
        d.send({"type": TYPE_QUIET})
        d.hang_up()
        result = wait(fd)
    finally:
        os.close(fd)
        relisten(d)
    log("checkpoint: %s" % result)
    return result


def unlink(path):
    """Removes a closed listener's socket file: gVisor would look it up
    again, in vain, in a copy restored in another folder."""
    try:
        os.unlink(path)
    except OSError as e:
        log("unlink %s: %s" % (path, e))


def wait(fd):
    """What the checkpoint said, once it is done, or "error" after
    QUIESCE_WAIT."""
    ready, _, _ = select.select([fd], [], [], QUIESCE_WAIT)
    if not ready:
        return "error"
    try:
        return os.read(fd, 64).decode(errors="replace").strip() or "error"
    except OSError:
        return "error"


def relisten(d):
    """Listens again at LISTEN_PATH and SPAWN_PATH. The folder is the
    host's; should the bind fail (it should not), the agent keeps trying
    a while rather than end the sandbox."""
    for attempt in range(50):
        try:
            if d.listener is None:
                d.listener = listen_at(LISTEN_PATH)
            spawn.resume()
            return
        except OSError as e:
            if attempt == 0:
                log("listen again: %s" % e)
            select.select([], [], [], 0.1)
    raise OSError("the agent could not listen again after a checkpoint")
