# sandboxd agent: processes the daemon starts beside the interpreter
# (protocol 16), in the supervisor. A runtime's exec (runc's init, runsc
# exec) costs 15-20 ms a process; a fork here costs one. The supervisor
# already is what such a process must be (the sandbox's user, namespaces,
# cgroup, seccomp filter, no_new_privs, no capabilities), and a child
# inherits all of it.
#
# A listener of its own, beside the daemon's (SPAWN_FD, made by the daemon
# on the host; under gVisor SPAWN_PATH, beside LISTEN_PATH), served by a
# thread: a process starts while an execution runs. One connection a
# process:
#   -> {"argv":[S],"env":["K=V"],"cwd":S}\n  with SCM_RIGHTS: stdin,
#      stdout, stderr (the daemon's pipes, or a file)
#   <- {"pid":N}\n  or  {"error":S}\n (then the connection closes)
#   -> {"signal":N}\n  at any time: os.kill(pid, N)
#   <- {"exit":N}\n  once it has ended (128+S for signal S), then the close
# A daemon that hangs up lets the process run on, unwatched.
#
# The process is the supervisor's child, in a session of its own; the
# reaper (_sandboxd_procs) reaps it and keeps its status, as it watches
# it. The thread wakes on SIGCHLD through the signal module's wakeup fd,
# whichever thread the signal reached, and reaps too: the main thread runs
# Python's handler only between its own bytecodes.
import _signal as signal
import _socket
import _thread
import os
import select
import sys

import _sandboxd_procs as procs
from _sandboxd_consts import SPAWN_FD, SPAWN_PATH
from _sandboxd_daemon import inherited as inherited_listener, listen_at
from _sandboxd_wire import json_dumps, json_loads, log

# MAX_LINE bounds a request line (argv and env, which Linux bounds at a
# quarter of the stack's limit, JSON-escaped) and a command line.
MAX_LINE = 16 << 20
# FDS is how many descriptors a request carries.
FDS = 3
# IO_WAIT bounds a request's read and an answer's write: the daemon is
# on the other end, and a stuck one must not stop the thread.
IO_WAIT = 5.0


class Child:
    """A process the daemon started, and its connection."""

    def __init__(self, conn, pid, popen):
        self.conn = conn
        self.pid = pid
        # popen is subprocess's handle: its returncode is set at the end,
        # or subprocess would wait for the pid itself when it is collected.
        self.popen = popen
        self.buf = b""


class Spawner:
    def __init__(self, listener, wake):
        self.listener = listener
        self.wake = wake
        self.children = {}  # connection fd -> Child
        self.subprocess = None

    def serve(self):
        while True:
            fds = [self.listener.fileno(), self.wake, *self.children]
            try:
                ready, _, _ = select.select(fds, [], [])
            except OSError as e:
                log("spawner: select: %s" % e)
                return
            for fd in ready:
                if fd == self.wake:
                    try:
                        os.read(self.wake, 512)
                    except OSError:
                        pass
                elif fd == self.listener.fileno():
                    self.accept()
                else:
                    self.command(fd)
            self.ended()

    def accept(self):
        try:
            fd, _ = self.listener._accept()
        except OSError:
            return
        conn = _socket.socket(fileno=fd)
        conn.settimeout(IO_WAIT)
        fds = []
        try:
            line, fds = receive(conn)
            child = self.start(conn, json_loads(line), fds)
        except (OSError, ValueError, TypeError, KeyError, UnicodeError) as e:
            send(conn, {"error": error_text(e)})
            conn.close()
            return
        finally:
            for f in fds:
                os.close(f)
        if send(conn, {"pid": child.pid}):
            self.children[conn.fileno()] = child
        else:
            self.forget(child)

    def start(self, conn, req, fds):
        if len(fds) != FDS:
            raise ValueError("a process needs %d descriptors, not %d" % (FDS, len(fds)))
        argv = [str(a) for a in req["argv"]]
        if not argv:
            raise ValueError("no command to run")
        env = {}
        for kv in req.get("env") or ():
            k, _, v = str(kv).partition("=")
            env[k] = v
        if self.subprocess is None:
            import subprocess  # once, at the first process: ~10 ms
            self.subprocess = subprocess
        sp = self.subprocess
        # Watched under the reaper's lock, so that a process that ends at
        # once keeps its status.
        with procs.LOCK:
            try:
                p = sp.Popen(argv, stdin=fds[0], stdout=fds[1], stderr=fds[2], cwd=req.get("cwd") or None, env=env,
                             start_new_session=True, close_fds=True, restore_signals=True)
            except sp.SubprocessError as e:
                raise ValueError(str(e)) from None
            procs.WATCHED.add(p.pid)
        return Child(conn, p.pid, p)

    def command(self, fd):
        child = self.children[fd]
        try:
            data = child.conn.recv(4096)
        except OSError:
            data = b""
        if not data:
            self.forget(child)  # the daemon let go: it runs on
            return
        child.buf += data
        while b"\n" in child.buf:
            line, _, child.buf = child.buf.partition(b"\n")
            try:
                sig = int(json_loads(line).get("signal"))
                os.kill(child.pid, sig)
            except (ValueError, TypeError, AttributeError, OSError):
                pass
        if len(child.buf) > MAX_LINE:
            self.forget(child)

    def ended(self):
        """Tells the daemon of every process that has ended."""
        if not self.children:
            return
        procs.reap_zombies()
        for child in list(self.children.values()):
            st = procs.EXITED.get(child.pid)
            if st is None:
                continue
            code = 128 + os.WTERMSIG(st) if os.WIFSIGNALED(st) else os.WEXITSTATUS(st)
            child.popen.returncode = code
            send(child.conn, {"exit": code})
            self.forget(child)

    def forget(self, child):
        self.children.pop(child.conn.fileno(), None)
        if child.popen.returncode is None:
            child.popen.returncode = -1  # not subprocess's to wait for
        procs.unwatch(child.pid)
        child.conn.close()


def error_text(e):
    """e as one plain phrase: the system's words for an OSError, and the
    path it was about (a missing cwd), not Python's "[Errno N]"."""
    if isinstance(e, OSError) and e.strerror:
        return "%s: %s" % (e.filename, e.strerror) if e.filename else e.strerror
    return str(e) or type(e).__name__


def receive(conn):
    """A request's line and the descriptors that came with it."""
    data, anc, flags, _ = conn.recvmsg(65536, _socket.CMSG_SPACE(4 * FDS))
    fds = []
    for level, kind, raw in anc:
        if level == _socket.SOL_SOCKET and kind == _socket.SCM_RIGHTS:
            fds += [int.from_bytes(raw[i:i + 4], sys.byteorder, signed=True) for i in range(0, len(raw) - 3, 4)]
    try:
        if flags & getattr(_socket, "MSG_CTRUNC", 8):
            raise ValueError("too many descriptors")
        chunks, size, more = [data], len(data), data
        while b"\n" not in more:
            if size > MAX_LINE:
                raise ValueError("the request is too long")
            more = conn.recv(1 << 20)
            if not more:
                raise ValueError("the request was cut short")
            chunks.append(more)
            size += len(more)
    except BaseException:
        for f in fds:
            os.close(f)
        raise
    return b"".join(chunks).partition(b"\n")[0], fds


def send(conn, msg):
    try:
        conn.sendall((json_dumps(msg) + "\n").encode())
        return True
    except OSError:
        return False


def start(inherited):
    """Listens for the daemon's processes and serves them from a thread:
    on SPAWN_FD if the daemon's listener was inherited (it made this one
    too), else at SPAWN_PATH. Called by the supervisor's main thread (the
    wakeup fd is its to set). Without the listener (a daemon before 16)
    the runtime runs the processes, as before."""
    try:
        listener = inherited_listener(SPAWN_FD) if inherited else listen_at(SPAWN_PATH)
    except OSError as e:
        listener = None
        log("no listener for processes: %s" % e)
    if listener is None:
        return
    r, w = os.pipe()
    os.set_blocking(r, False)
    os.set_blocking(w, False)
    signal.set_wakeup_fd(w, warn_on_full_buffer=False)
    _thread.start_new_thread(Spawner(listener, r).serve, ())
