# sandboxd agent: shell executions, in the supervisor. A command runs as
# `/bin/sh -c` in a session of its own, a child of the supervisor (not of
# the worker: its state is not the cells'), with the request's environment
# and working folder; the supervisor relays its output, enforces the
# timeout (the kill at once) and the daemon's interrupts (SIGINT, the kill
# after the grace), and kills what it started once it stopped.
import _signal as signal
import os
import select
import time

import _sandboxd_procs as procs
import _sandboxd_worker as worker
from _sandboxd_answer import STOPPED_EXIT_CODE, Capture, budget_of, drain
from _sandboxd_consts import (
    STATUS_ERROR, STATUS_INTERRUPTED, STATUS_KILLED, STATUS_OK, STATUS_TIMEOUT, TYPE_STDERR, TYPE_STDOUT)

# A program can sleep through a SIGINT, so an interrupt repeats it to the
# command once more after COMMAND_RESIGNAL, as a second Ctrl-C (programs
# may clean up on the first).
COMMAND_RESIGNAL = 1.0


def execute(agent, req, exec_id):
    """Runs a shell command for agent (the supervisor's Agent: its daemon
    and the processes noted before); the daemon may interrupt it (see
    Daemon.read)."""
    limit = int(req.get("max_output", 1 << 20))
    timeout = float(req.get("timeout", 30))
    grace = float(req.get("grace", 1.0))
    budget = budget_of(req)
    done = {"status": STATUS_OK, "exit_code": 0, "result": None, "error": None,
            "outputs": [], "truncated": False, "state_reset": False}
    import subprocess
    try:
        env = dict(os.environ)
        env.update({str(k): str(v) for k, v in (req.get("env") or {}).items()})
        procs.spawning()
        try:
            p = subprocess.Popen(["/bin/sh", "-c", req.get("code", "")],
                                 stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, cwd=req.get("cwd") or None,
                                 env=env, start_new_session=True, preexec_fn=worker.raise_oom_score)
        except BaseException:
            procs.SPAWNING[0] = False
            raise
        # Watched before SPAWNING ends: a command that exits at once (exit
        # 3) may be reaped in between, and its status must be kept, or its
        # wait finds none and says 0.
        procs.watch(p.pid)
    except (OSError, ValueError, TypeError) as e:
        # A missing cwd, the pids limit, a NUL the daemon let through:
        # the command's error, never the agent's end.
        agent.daemon.send({"type": TYPE_STDERR, "data": "sh: %s\n" % e})
        done.update(status=STATUS_ERROR, exit_code=127)
        return done
    out, err = p.stdout.fileno(), p.stderr.fileno()
    os.set_blocking(out, False)
    os.set_blocking(err, False)
    send = agent.daemon.send
    caps = {out: Capture(TYPE_STDOUT, send, limit, budget), err: Capture(TYPE_STDERR, send, limit, budget)}
    fds = [out, err]
    deadline = time.monotonic() + timeout
    # Stopping: for the daemon's interrupt, SIGINT to the command's
    # group, the kill at kill_at if it has not ended by then; for the
    # timeout, the kill at once. Either way, what the command started
    # goes too once it has ended (kill_new), but the workers and their
    # parked copies (see _sandboxd_agent's checkpoints).
    stopping = None  # STATUS_TIMEOUT or STATUS_INTERRUPTED, once stopping
    kill_at = None
    resignal_at = None
    killed = False
    status = None
    interrupt = agent.daemon.read(exec_id, fill=False)  # it may have come with the request
    poll = 0.0005
    while True:
        status = procs.child_status(p.pid)
        if status is not None:
            break
        now = time.monotonic()
        if stopping is None and interrupt:
            stopping, kill_at = STATUS_INTERRUPTED, now + grace
            procs.signal_group(p.pid, signal.SIGINT)
            resignal_at = now + COMMAND_RESIGNAL
        elif resignal_at is not None and now >= resignal_at:
            procs.signal_group(p.pid, signal.SIGINT)
            resignal_at = None
        elif stopping is None and now >= deadline:
            stopping, kill_at = STATUS_TIMEOUT, now
        if kill_at is not None and now >= kill_at:
            procs.signal_group(p.pid, signal.SIGKILL)
            # Now, not after the wait: what left the group (or was
            # forked while the group's kill went round) may be a fork
            # bomb's, which would fill the pids limit meanwhile.
            procs.kill_new(agent.before, spare=agent.worker_pids())
            status = procs.reap(p.pid)
            procs.wait_group_gone(p.pid)
            # Nothing is left to kill after: the group's members
            # cannot fork once their SIGKILL is pending.
            killed = True
            break
        # Poll the command at least every 50 ms: its end has no fd. Once
        # its output has closed it is most likely ending (its SIGCHLD,
        # which select does not return for, is on its way): polled from
        # 1 ms up, or a command would wait out the 50 ms after its end.
        if fds:
            poll, wait = 0.0005, 0.05
        else:
            poll = wait = min(poll * 2, 0.05)
        wait = min(wait, (kill_at if kill_at is not None else deadline) - now)
        daemon = agent.daemon.watched(exec_id)
        if not fds and not daemon:
            time.sleep(max(min(0.01, wait), 0))
            continue
        try:
            ready, _, _ = select.select(fds + daemon, [], [], max(wait, 0))
        except InterruptedError:
            continue
        for fd in ready:
            if daemon and fd == daemon[0]:
                interrupt = agent.daemon.read(exec_id) or interrupt
            elif not drain(fd, caps[fd]):
                fds.remove(fd)
    if stopping and not killed:
        procs.kill_new(agent.before, spare=agent.worker_pids())
    # The reaper took the status: Popen must not wait for the pid.
    rc = os.waitstatus_to_exitcode(status) if status is not None else 1
    p.returncode = rc
    procs.unwatch(p.pid)
    for fd, cap in caps.items():
        drain(fd, cap)
        cap.finish()
    p.stdout.close()
    p.stderr.close()
    done["truncated"] = any(c.truncated for c in caps.values()) or budget.cut
    if stopping:
        done.update(status=stopping, exit_code=STOPPED_EXIT_CODE[stopping])
    elif rc < 0:
        done.update(status=STATUS_KILLED if rc == -signal.SIGKILL else STATUS_ERROR, exit_code=128 - rc)
    elif rc != 0:
        done.update(status=STATUS_ERROR, exit_code=rc)
    return done
