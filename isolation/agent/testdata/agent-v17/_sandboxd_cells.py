# sandboxd agent: Python executions, in the supervisor. A cell runs in the
# forked worker (_sandboxd_worker), whose globals persist between
# executions; the supervisor holds its pid and the pipes that lead to it
# (Worker), sends it each cell as a request, relays what it writes and
# displays, enforces the timeout and the daemon's interrupts, and forks a
# fresh worker when one dies or does not stop (state_reset).
#
# The worker runs user code, so nothing it sends is trusted: each request
# carries a sequence number and a random token that the reply must echo,
# stray or malformed lines on the control pipe are dropped, and requests go
# out without blocking. A forked copy of the worker that falls out of user
# code exits instead of answering. Each cell starts with fds 1 and 2,
# sys.stdout/stderr and the SIGINT handler as the agent set them, and a worker
# that died between cells is replaced before the next one (state_reset).
import _signal as signal
import gc
import os
import select
import time

import _sandboxd_fork as fork
import _sandboxd_procs as procs
import _sandboxd_worker as worker
from _sandboxd_answer import STOPPED_EXIT_CODE, Capture, budget_of, discard, drain
from _sandboxd_consts import (
    STATUS_ERROR, STATUS_INTERRUPTED, STATUS_KILLED, STATUS_OK, STATUS_TIMEOUT, TYPE_DISPLAY, TYPE_STDERR, TYPE_STDOUT)
from _sandboxd_wire import READ_CHUNK, json_dumps, json_loads, log, write_some

# A program can sleep through a SIGINT (Python does, when it lands between
# its last check for signals and a blocking call), so a stop repeats it: to
# the worker every WORKER_RESIGNAL seconds until the cell ends (the worker
# takes one per cell); see also _sandboxd_shell's COMMAND_RESIGNAL.
WORKER_RESIGNAL = 0.2

# FORK_WAIT bounds a worker's fork of a context (see fork): it forks
# between cells, at once.
FORK_WAIT = 10.0


class Tokens:
    """Random tokens for the worker's requests, 16 bytes each, read from
    the kernel 64 at a time: one getrandom less on most executions' path."""

    def __init__(self):
        self.pool = b""

    def next(self):
        if not self.pool:
            self.pool = os.urandom(16 * 64)
        token, self.pool = self.pool[:16], self.pool[16:]
        return token.hex()


class Worker:
    """The supervisor's end of the forked interpreter: its pid and the
    pipes that lead to it. A context's worker (see _sandboxd_agent) starts
    in its context's folder, cwd."""

    def __init__(self, cwd="", node=None):
        self.cwd = cwd
        # node: the node binary of a JavaScript context's worker (None: a
        # Python worker, forked from the supervisor).
        self.node = node
        self.pid = 0
        self.out = self.err = self.ctrl_r = self.ctrl_w = -1
        # sock: the supervisor's end of the worker's fork channel.
        self.sock = None
        self.ctrl_buf = b""
        self.seq = 0
        self.stray = 0

    def start(self):
        # The replies' pipe first: its read end is then below those of
        # stdout and stderr (the lowest free fds go first), which
        # execute relies on.
        rep_r, rep_w = os.pipe()
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        req_r, req_w = os.pipe()
        sock, chan = fork.channel()
        procs.spawning()
        # Objects made so far are left alone by the collector in both
        # processes: a collection would write to every one of them and
        # copy the pages the fork shares.
        gc.freeze()
        pid = os.fork()
        if pid == 0:
            procs.stop_reaper()
            if self.cwd:
                try:
                    os.chdir(self.cwd)
                except OSError as e:
                    log("context folder %r: %s" % (self.cwd, e))
            if self.node:
                worker.exec_node(self.node, (out_w, err_w, req_r, rep_w, chan.fileno()))  # never returns
            worker.run(out_w, err_w, req_r, rep_w, chan.fileno())  # never returns
        for fd in (out_w, err_w, req_r, rep_w):
            os.close(fd)
        chan.close()
        for fd in (out_r, err_r, rep_r, req_w):
            os.set_blocking(fd, False)
        self.pid, self.out, self.err, self.ctrl_w, self.ctrl_r = pid, out_r, err_r, req_w, rep_r
        self.sock = sock
        self.ctrl_buf = b""
        procs.watch(pid)

    def fork(self, tokens, cwd):
        """A new worker, a copy of this one's interpreter (every global,
        copied on write), started in cwd if given, as its own process
        group; see _sandboxd_fork. Raises OSError if it cannot. It makes
        contexts' "from" copies and undo checkpoints (see _sandboxd_agent)."""
        self.seq += 1
        token = tokens.next()
        pending = (json_dumps({"fork": True, "cwd": cwd, "seq": self.seq, "token": token}) + "\n").encode()
        left, _, _ = select.select([self.out, self.err, self.ctrl_r], [], [], 0)
        for fd in left:
            discard(fd)
        self.ctrl_buf = b""
        deadline = time.monotonic() + FORK_WAIT
        reply = None
        while reply is None:
            wait = deadline - time.monotonic()
            if wait <= 0:
                raise OSError("the interpreter did not fork within %.0f s" % FORK_WAIT)
            ready, writable, _ = select.select([self.ctrl_r], [self.ctrl_w] if pending else [], [], wait)
            if writable:
                pending = write_some(self.ctrl_w, pending)
            if ready:
                try:
                    data = os.read(self.ctrl_r, READ_CHUNK)
                except BlockingIOError:
                    continue
                if not data:
                    raise OSError("the interpreter ended")
                self.ctrl_buf += data
                reply = take_reply(self, token)
        pid = reply.get("pid")
        if not isinstance(pid, int) or pid <= 0:
            raise OSError("the interpreter could not fork")
        self.sock.settimeout(FORK_WAIT)
        fds = fork.receive_fds(self.sock, len(fork.FD_NAMES))
        w = Worker(cwd)
        w.pid, (w.out, w.err, w.ctrl_r, w.ctrl_w) = pid, fds[:4]
        w.sock = fork.socket_of(fds[4])
        for fd in fds[:4]:
            os.set_blocking(fd, False)
        procs.watch(pid)
        return w

    def exited(self):
        """The worker's wait status if it has exited, else None. The reaper
        has kept it: SIGCHLD's handler runs before the supervisor reads the
        next request, so no waitpid is needed on every execution's path."""
        if not self.pid:
            return None
        return procs.EXITED.get(self.pid)

    def stop(self, alone=True):
        """Kills the worker and, when it is alone (no other context's
        worker to spare), everything else in the sandbox but PID 1."""
        if self.pid:
            if not (alone and procs.kill_all()):
                # Beside other contexts' workers, or not a sandbox's PID 1
                # (run by hand or by a test): the worker's own session (it
                # called setsid) is all it may kill.
                try:
                    os.killpg(self.pid, signal.SIGKILL)
                except OSError:
                    try:
                        os.kill(self.pid, signal.SIGKILL)  # not (yet) a group of its own
                    except OSError:
                        pass
            procs.reap(self.pid)
            if alone:
                # Other workers are children too: waiting for no child
                # to be left would wait for them.
                procs.reap_all()
            procs.unwatch(self.pid)
        for fd in (self.out, self.err, self.ctrl_r, self.ctrl_w):
            if fd >= 0:
                try:
                    os.close(fd)
                except OSError:
                    pass
        if self.sock is not None:
            self.sock.close()
            self.sock = None
        self.pid = 0
        self.out = self.err = self.ctrl_r = self.ctrl_w = -1


def find_node():
    """The template's node, found on the sandbox's PATH, or None."""
    for d in os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin").split(":"):
        p = os.path.join(d or ".", "node")
        if os.access(p, os.X_OK) and not os.path.isdir(p):
            return p
    return None


def execute(agent, req, send=None, exec_id=None, start=None, w=None):
    """Runs a cell in agent's worker; exec_id, for an execution of the
    daemon's, lets the daemon interrupt it (see Daemon.read). start is
    when the request came (time.monotonic), if the caller knows: under
    gVisor a clock read can be a system call (where its vDSO cannot
    use the TSC), so a quick cell reads the clock once here, and
    Agent.handle once more for the duration. agent is the supervisor's
    Agent: its workers, tokens, daemon, preload and the processes noted
    before (before). w is the worker of the cell's context (default:
    the agent's first, the context "default")."""
    send = send or agent.daemon.send
    limit = int(req.get("max_output", 1 << 20))
    timeout = float(req.get("timeout", 30))
    grace = float(req.get("grace", 1.0))
    w = w or agent.worker
    budget = budget_of(req)
    caps = {w.out: Capture(TYPE_STDOUT, send, limit, budget), w.err: Capture(TYPE_STDERR, send, limit, budget)}
    done = {"status": STATUS_OK, "exit_code": 0, "result": None, "error": None,
            "outputs": [], "truncated": False, "state_reset": False}
    if w.exited() is not None:
        # The last cell left no interpreter behind: start afresh.
        w.pid = 0
        agent.restart(w, agent.alone())
        done["state_reset"] = True
        caps = {w.out: Capture(TYPE_STDOUT, send, limit, budget), w.err: Capture(TYPE_STDERR, send, limit, budget)}
    # Output left over from background processes of earlier cells, and
    # control lines nobody asked for, belong to nobody: drop them (one
    # select finds the pipes that hold any: usually none).
    left, _, _ = select.select([w.out, w.err, w.ctrl_r], [], [], 0)
    for fd in left:
        discard(fd)
    w.ctrl_buf = b""
    w.stray = 0
    w.seq += 1
    token = agent.tokens.next()
    pending = (json_dumps({"code": req.get("code", ""), "env": req.get("env") or {},
                           "cwd": req.get("cwd") or "", "max_output": limit, "max_answer": budget.left,
                           "noop": bool(req.get("noop")),
                           "seq": w.seq, "token": token}) + "\n").encode()
    # Most requests fit the pipe: no select needed to send them.
    pending = write_some(w.ctrl_w, pending)
    now = start if start is not None else time.monotonic()
    deadline = now + timeout
    # Stopping, for the timeout or the daemon's interrupt alike: SIGINT
    # to the worker's group (KeyboardInterrupt in the cell, or before it
    # begins: see the worker's on_sigint), repeated until the cell ends,
    # the kill at kill_at if it has not ended by then.
    stopping = None  # STATUS_TIMEOUT or STATUS_INTERRUPTED, once stopping
    kill_at = None
    signalled = None  # when SIGINT was last sent
    reply = None
    dead = False
    fds = [w.out, w.err, w.ctrl_r]

    def on_display(o):
        # What the cell wrote before display() is in the pipes: it
        # goes first. The worker waits for the empty line that says
        # so before it writes more.
        nonlocal pending
        for fd, cap in caps.items():
            drain(fd, cap)
        o = budget.output(o)
        if o is not None:
            send({"type": TYPE_DISPLAY, "output": o})
        pending = write_some(w.ctrl_w, pending + b"\n")

    interrupt = agent.daemon.read(exec_id, fill=False)  # it may have come with the request
    while reply is None and not dead:
        if stopping is None and (interrupt or now >= deadline):
            stopping, kill_at = STATUS_INTERRUPTED if interrupt else STATUS_TIMEOUT, now + grace
        if stopping and (signalled is None or now >= signalled + WORKER_RESIGNAL):
            procs.signal_group(w.pid, signal.SIGINT)
            signalled = now
        if kill_at is not None and now >= kill_at:
            break
        wait = (kill_at if kill_at is not None else deadline) - now
        if signalled is not None:
            wait = min(wait, signalled + WORKER_RESIGNAL - now)
        daemon = agent.daemon.watched(exec_id)
        try:
            ready, writable, _ = select.select(fds + daemon, [w.ctrl_w] if pending else [], [], max(wait, 0))
        except InterruptedError:
            now = time.monotonic()
            continue
        if writable:
            pending = write_some(w.ctrl_w, pending)
        # An interrupt read in the same round as the reply changes
        # nothing: the cell has ended.
        for fd in ready:
            if daemon and fd == daemon[0]:
                interrupt = agent.daemon.read(exec_id) or interrupt
            elif fd == w.ctrl_r:
                try:
                    data = os.read(fd, READ_CHUNK)
                except BlockingIOError:
                    continue
                except OSError:
                    data = b""
                if not data:
                    dead = True
                    break
                w.ctrl_buf += data
                reply = take_reply(w, token, on_display)
            elif not drain(fd, caps[fd]):
                fds.remove(fd)
        if reply is None and not dead:
            now = time.monotonic()
    # Output the cell wrote before its reply was drained in the round
    # that read the reply: select polls fds in ascending order, the
    # replies' pipe first (see Worker.start), so that output was in its
    # pipe when select polled it. Any other way out of the loop (or
    # another order of fds) drains the pipes here.
    if reply is None or w.ctrl_r > min(w.out, w.err):
        for fd, cap in caps.items():
            drain(fd, cap)
    for cap in caps.values():
        cap.finish()
    done["truncated"] = any(c.truncated for c in caps.values())
    if reply is not None:
        # The worker cut what it could; it is user code's process,
        # so what it sent is cut again here.
        done["error"] = budget.error(reply.get("error"))
        result = reply.get("result")
        done["result"] = budget.text(result) if isinstance(result, str) else None
        done["outputs"] = budget.outputs(reply.get("outputs"))
        done["truncated"] = done["truncated"] or budget.cut or reply.get("truncated") is True
        if done["error"]:
            done["status"] = STATUS_ERROR
            done["exit_code"] = 1
        if stopping:
            done["status"] = stopping
            done["exit_code"] = STOPPED_EXIT_CODE[stopping]
            # The cell stopped; what it started stops too.
            procs.kill_new(agent.before, spare=agent.worker_pids())
        if signalled is not None and not req.get("noop"):
            # A SIGINT that reached the worker after the cell ended
            # must not stop the next one (see the worker's on_sigint).
            execute(agent, {"code": "", "noop": True, "timeout": 10}, send=lambda m: None, w=w)
        return done
    # The worker died, or ignored the interrupt: start over.
    status = None
    if dead:
        # No one can answer any more; a worker that closed its end and
        # runs on is killed below.
        status = procs.reap(w.pid, 1.0)
        procs.unwatch(w.pid)
        w.pid = 0
    agent.restart(w, agent.alone())
    done["state_reset"] = True
    if stopping:
        done["status"] = stopping
        done["exit_code"] = STOPPED_EXIT_CODE[stopping]
    elif status is not None and os.WIFSIGNALED(status):
        done["status"] = STATUS_KILLED
        done["exit_code"] = 128 + os.WTERMSIG(status)
        done["error"] = {"name": "Killed", "value": "the interpreter was killed by signal %d (out of memory?)" % os.WTERMSIG(status), "traceback": ""}
    else:
        code = os.WEXITSTATUS(status) if status is not None and os.WIFEXITED(status) else 1
        done["status"] = STATUS_ERROR
        done["exit_code"] = code
        done["error"] = {"name": "SystemExit", "value": "the interpreter exited with status %d" % code, "traceback": ""}
    return done


def take_reply(w, token, on_display=None):
    """The reply to the current request among the complete lines read,
    if any; on_display gets the output of each display line of the
    request before it. Anything else is user code writing to the
    control pipe."""
    while b"\n" in w.ctrl_buf:
        head, w.ctrl_buf = w.ctrl_buf.split(b"\n", 1)
        try:
            msg = json_loads(head)
        except ValueError:
            msg = None
        if isinstance(msg, dict) and msg.get("seq") == w.seq and msg.get("token") == token:
            if "display" not in msg:
                return msg
            if on_display is not None:
                on_display(msg["display"])
            continue
        if not head:
            continue
        if not w.stray:
            log("dropped a stray line on the worker's control pipe")  # once a cell: the log is on the host
        w.stray += 1
    if len(w.ctrl_buf) > 256 << 20:
        w.ctrl_buf = b""  # a line this long is not a reply
    return None
