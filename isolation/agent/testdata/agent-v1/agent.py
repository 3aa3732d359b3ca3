# sandboxd in-sandbox agent. Standard library only; runs as the sandbox's
# PID 1 under the sandbox uid.
#
# Shape: this supervisor process never runs user code. It accepts the daemon
# on an inherited listening Unix socket (fd 3; the socket file lives on the
# host, out of the sandbox's reach, so a restarted daemon can reconnect), and
# keeps one forked worker interpreter whose globals persist between
# executions. The worker's fd 1 and 2 are pipes that the supervisor reads, so
# output of child processes is captured too. Timeouts interrupt the worker
# (KeyboardInterrupt) and, if that does not stop it, kill every process in
# the sandbox but PID 1 and fork a fresh worker (state_reset).
#
# The worker runs user code, so nothing it sends is trusted: each request
# carries a sequence number and a random token that the reply must echo,
# stray or malformed lines on the control pipe are dropped, and requests go
# out without blocking. A forked copy of the worker that falls out of user
# code exits instead of answering. Each cell starts with fds 1 and 2,
# sys.stdout/stderr and the SIGINT handler as the agent set them, and a worker
# that died between cells is replaced before the next one (state_reset).
#
# Daemon protocol: one JSON object per line each way.
#   -> {"op":"ping","ready":B?}   <- {"type":"pong","pid":N,"undelivered":{done}?,"preload_error":{}?}
#   -> {"op":"exec","id":S,"language":"python"|"shell","code":S,"timeout":F,
#       "env":{},"cwd":S,"max_output":N,"grace":F}
#   <- {"type":"stdout"|"stderr","data":S}*  then
#   <- {"type":"done","id":S,"language":S,"status":S,"exit_code":N,"result":S|null,
#       "error":{}|null,"outputs":[],"truncated":B,"state_reset":B,"duration_ms":F}
# The daemon may go away (restart, crash) and come back on a new connection;
# the sandbox runs on meanwhile. An execution whose answer could not be sent
# is kept (the last one only, without its output) and handed over in the
# next pong, so the daemon can record how it ended.
#
# The template's preload code (argv[1], if any) runs in every new worker
# before its first cell, as a cell of its own whose output is dropped: user
# code finds what it imported already there, after a state reset too. The
# first worker's preload runs before the daemon is answered, and the pong
# says if it failed.
#
# Start-up time is on every cold create's clock: the agent runs with -S (no
# site), and the supervisor imports only what it needs to answer; the worker
# sets up site-packages and imports the rest after the fork, while the
# supervisor already answers the daemon.
# For the same reason it uses the C halves of socket, signal and json
# (the Python halves import enum and re: ~10 ms).
import _signal as signal
import _socket
import builtins
import codecs
import errno
import os
import select
import sys
import time

try:
    import _json

    class _JSONContext:
        strict = True
        object_hook = object_pairs_hook = None
        parse_float, parse_int, parse_constant = float, int, float
        memo = {}

    def _unserialisable(o):
        raise TypeError("%s is not JSON serialisable" % type(o).__name__)

    _scan = _json.make_scanner(_JSONContext())
    _encode = _json.make_encoder(None, _unserialisable, _json.encode_basestring_ascii, None, ":", ",", False, False, True)

    def json_loads(s):
        if isinstance(s, (bytes, bytearray)):
            s = s.decode("utf-8")
        s = s.strip()
        try:
            obj, end = _scan(s, 0)
        except (StopIteration, SystemError):
            # SystemError: the scanner reports a syntax error with the
            # exception class of the json package, which is not loaded.
            raise ValueError("not JSON") from None
        if end != len(s):
            raise ValueError("extra data after the JSON value")
        return obj

    def json_dumps(obj):
        return "".join(_encode(obj, 0))
except (ImportError, AttributeError, TypeError):  # another Python: the slow path
    import json
    json_loads, json_dumps = json.loads, json.dumps

LISTEN_FD = 3
CTRL_FD_BASE = 710  # high fds: the worker's control pipes, then copies of fds 1 and 2
READ_CHUNK = 65536
PRELOAD = sys.argv[1] if len(sys.argv) > 1 else ""
# Where the daemon puts this file (and its compiled form) in the sandbox.
AGENT_DIR = "/etc/sandboxd"
PRELOAD_TIMEOUT = 120.0


def log(msg):
    try:
        os.write(2, ("sandboxd-agent: %s\n" % msg).encode())
    except OSError:
        pass


def set_not_dumpable():
    # A non-dumpable process's /proc/PID/mem, fds and environ are closed to
    # other processes of the same uid: user code cannot poke the supervisor.
    try:
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE, 0
    except Exception as e:  # noqa: BLE001 - best effort, logged
        log("prctl(PR_SET_DUMPABLE): %s" % e)


def raise_oom_score():
    # Make the supervisor's children the OOM killer's first choice.
    try:
        with open("/proc/self/oom_score_adj", "w") as f:
            f.write("1000")
    except OSError:
        pass


# ---------------------------------------------------------------- worker --

def worker_main(ctrl_r, ctrl_w):
    """Runs in the forked child: executes cells until the pipe closes."""
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    raise_oom_score()
    reset_std_streams()
    import linecache  # noqa: F401 - every cell registers its source there
    import site
    if sys.flags.no_site:
        site.main()  # site-packages, .pth files, exit() and help()
    sys.stdin = open(0, "r", closefd=False)
    sys.__stdin__ = sys.stdin
    me = os.getpid()
    sys.argv = [""]
    # User code sees neither the agent's folder nor its module: an
    # agent.py of its own imports as it would anywhere.
    while AGENT_DIR in sys.path:
        sys.path.remove(AGENT_DIR)
    sys.modules.pop(__name__, None)
    if "" not in sys.path:
        sys.path.insert(0, "")
    # The cells' namespace is the __main__ module, as in a notebook: what
    # pickle (and multiprocessing) look up there is what the cells define.
    main = type(sys)("__main__")
    main.__dict__["__builtins__"] = builtins
    sys.modules["__main__"] = main
    ns = main.__dict__
    cell = 0
    buf = b""
    while True:
        while b"\n" not in buf:
            try:
                chunk = os.read(ctrl_r, READ_CHUNK)
            except BlockingIOError:
                os.set_blocking(ctrl_r, True)  # user code changed it
                continue
            if not chunk:
                os._exit(0)
            buf += chunk
        line, buf = buf.split(b"\n", 1)
        try:
            req = json_loads(line)
        except ValueError:
            continue
        if req.get("noop"):
            reply = {}  # the supervisor asks whether the worker is up
        else:
            cell += 1
            reset_std_streams()
            signal.signal(signal.SIGINT, signal.default_int_handler)
            reply = run_cell(ns, req, cell)
        if os.getpid() != me:
            # A fork made by user code came back here: only the worker answers.
            os._exit(0)
        reply["seq"], reply["token"] = req.get("seq"), req.get("token")
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:  # noqa: BLE001 - user code may have broken it
                pass
        # The leading newline ends whatever user code left half-written on
        # the pipe, so that the reply starts a line of its own.
        data = ("\n" + json_dumps(reply) + "\n").encode()
        try:
            while data:
                try:
                    n = os.write(ctrl_w, data)
                except BlockingIOError:
                    os.set_blocking(ctrl_w, True)  # user code changed it
                    continue
                data = data[n:]
        except OSError:
            os._exit(1)


def reset_std_streams():
    """Points fds 1 and 2 and sys.stdout/stderr back at the agent's pipes,
    whatever the last cell did to them."""
    for fd in (1, 2):
        try:
            os.dup2(CTRL_FD_BASE + 1 + fd, fd)
        except OSError:
            pass  # user code closed the copy: keep what there is
    for name, fd in (("stdout", 1), ("stderr", 2)):
        cur = STD_STREAMS.get(name)
        if cur is None or cur.closed:
            cur = STD_STREAMS[name] = open(fd, "w", buffering=1, encoding="utf-8", errors="replace", closefd=False)
        setattr(sys, name, cur)
        setattr(sys, "__%s__" % name, cur)


STD_STREAMS = {}


def run_cell(ns, req, cell):
    # _ast, not ast: the C half has all a cell needs, and an idle worker
    # keeps megabytes less (traceback, too, is imported at the first error).
    import _ast
    code = req.get("code", "")
    limit = int(req.get("max_output", 1 << 20))
    env = req.get("env") or {}
    cwd = req.get("cwd") or ""
    name = "<cell-%d>" % cell
    import linecache
    lines = code.splitlines(True)
    linecache.cache[name] = (len(code), None, lines, name)
    saved_env = {k: os.environ.get(k) for k in env}
    saved_cwd = None
    reply = {"result": None, "error": None, "outputs": []}
    try:
        os.environ.update({str(k): str(v) for k, v in env.items()})
        if cwd:
            saved_cwd = os.getcwd()
            os.chdir(cwd)
        tree = compile(code, name, "exec", _ast.PyCF_ONLY_AST)
        last = None
        if tree.body and isinstance(tree.body[-1], _ast.Expr):
            last = _ast.Expression(tree.body.pop().value)
        exec(compile(tree, name, "exec"), ns)
        if last is not None:
            value = eval(compile(last, name, "eval"), ns)
            if value is not None:
                ns["_"] = value
                r = repr(value)
                if len(r) > limit:
                    r = r[:limit]
                reply["result"] = r
    except BaseException as e:  # noqa: BLE001 - every exception is the user's
        tb = e.__traceback__
        # Drop the agent's own frames: the user's traceback starts in the cell.
        while tb is not None and tb.tb_frame.f_code.co_filename != name:
            tb = tb.tb_next
        import traceback
        text = "".join(traceback.format_exception(type(e), e, tb))
        print(text, end="", file=sys.stderr)
        reply["error"] = {"name": type(e).__name__, "value": str(e), "traceback": text}
    finally:
        try:
            if saved_cwd is not None:
                os.chdir(saved_cwd)
        except OSError:
            pass
        for k, v in saved_env.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    reply["outputs"] = collect_figures()
    return reply


def collect_figures():
    plt = sys.modules.get("matplotlib.pyplot")
    if plt is None:
        return []
    import base64
    import io
    out = []
    try:
        for num in plt.get_fignums():
            fig = plt.figure(num)
            b = io.BytesIO()
            fig.savefig(b, format="png")
            out.append({"mime": "image/png", "data": base64.b64encode(b.getvalue()).decode()})
        plt.close("all")
    except Exception as e:  # noqa: BLE001
        log("figure capture: %s" % e)
    return out


# ------------------------------------------------------------ supervisor --

class Worker:
    """The forked interpreter and the pipes that lead to it."""

    def __init__(self):
        self.pid = 0
        self.out = self.err = self.ctrl_r = self.ctrl_w = -1
        self.ctrl_buf = b""
        self.seq = 0
        self.stray = 0

    def start(self):
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        req_r, req_w = os.pipe()
        rep_r, rep_w = os.pipe()
        pid = os.fork()
        if pid == 0:
            try:
                os.setsid()
                null = os.open("/dev/null", os.O_RDONLY)
                os.dup2(null, 0)
                os.dup2(out_w, 1)
                os.dup2(err_w, 2)
                os.dup2(req_r, CTRL_FD_BASE)
                os.dup2(rep_w, CTRL_FD_BASE + 1)
                os.dup2(out_w, CTRL_FD_BASE + 2)
                os.dup2(err_w, CTRL_FD_BASE + 3)
                os.closerange(3, CTRL_FD_BASE)
                os.closerange(CTRL_FD_BASE + 4, 65536)
                for fd in range(CTRL_FD_BASE, CTRL_FD_BASE + 4):
                    os.set_inheritable(fd, False)
                worker_main(CTRL_FD_BASE, CTRL_FD_BASE + 1)
            except BaseException as e:  # noqa: BLE001
                log("worker: %r" % e)
            os._exit(1)
        for fd in (out_w, err_w, req_r, rep_w):
            os.close(fd)
        for fd in (out_r, err_r, rep_r, req_w):
            os.set_blocking(fd, False)
        self.pid, self.out, self.err, self.ctrl_w, self.ctrl_r = pid, out_r, err_r, req_w, rep_r
        self.ctrl_buf = b""
        EXITED.clear()
        WATCHED[0] = pid

    def exited(self):
        """The worker's wait status if it has exited (reaping it), else None."""
        if not self.pid:
            return None
        if self.pid in EXITED:
            return EXITED[self.pid]
        try:
            p, st = os.waitpid(self.pid, os.WNOHANG)
        except ChildProcessError:
            return 0
        return st if p == self.pid else None

    def stop(self):
        """Kills the worker and everything else in the sandbox but PID 1."""
        if self.pid:
            kill_all()
            reap(self.pid)
            reap_all()
        for fd in (self.out, self.err, self.ctrl_r, self.ctrl_w):
            if fd >= 0:
                try:
                    os.close(fd)
                except OSError:
                    pass
        self.pid = 0
        self.out = self.err = self.ctrl_r = self.ctrl_w = -1


def kill_all():
    # As PID 1 of the sandbox's pid namespace, kill(-1) reaches every other
    # process in it and none outside.
    try:
        os.kill(-1, signal.SIGKILL)
    except OSError:
        pass


def reap(pid, limit=5.0):
    """Waits for pid (bounded) and reaps any other exited children."""
    status = EXITED.get(pid)
    deadline = time.monotonic() + limit
    while status is None and time.monotonic() < deadline:
        try:
            p, st = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            break
        if p == pid:
            status = st
            break
        time.sleep(0.005)
    reap_zombies()
    return status


def reap_all(limit=5.0):
    """After kill(-1): waits (bounded) until no child is left, so the next
    execution starts in a sandbox with nothing of the last one."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        try:
            p, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if p == 0:
            time.sleep(0.002)


def wait_group_gone(pgid, limit=2.0):
    """After killpg: waits (bounded) until the group's processes are gone
    and reaped, reaping the orphans that PID 1 inherits on the way."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        reap_zombies()
        try:
            os.killpg(pgid, 0)
        except OSError:
            return
        time.sleep(0.002)


# The worker's pid and, once reaped by a sweep, its wait status: the sweeps
# reap every child, and the supervisor still wants to know how the worker
# ended.
WATCHED = [0]
EXITED = {}


def reap_zombies():
    while True:
        try:
            p, st = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if p == 0:
            return
        if p == WATCHED[0]:
            EXITED[p] = st


class Capture:
    """Forwards one output stream to the daemon, up to a cap."""

    def __init__(self, kind, send, limit):
        self.kind = kind
        self.send = send
        self.limit = limit
        self.sent = 0
        self.truncated = False
        self.dec = codecs.getincrementaldecoder("utf-8")(errors="replace")

    def feed(self, data):
        room = self.limit - self.sent
        if len(data) > room:
            data = data[:max(room, 0)]
            self.truncated = True
        if not data:
            return
        self.sent += len(data)
        text = self.dec.decode(data)
        if text:
            self.send({"type": self.kind, "data": text})

    def finish(self):
        text = self.dec.decode(b"", final=True)
        if text:
            self.send({"type": self.kind, "data": text})


def drain(fd, cap):
    """Reads fd until it would block. Returns False at end of file."""
    while True:
        try:
            data = os.read(fd, READ_CHUNK)
        except BlockingIOError:
            return True
        except OSError:
            return False
        if not data:
            return False
        cap.feed(data)


def write_some(fd, data):
    """Writes what the non-blocking fd takes of data; returns the rest."""
    try:
        return data[os.write(fd, data):]
    except BlockingIOError:
        return data
    except OSError:
        return b""  # a dead worker shows as end of file


def read_lines(conn):
    """The lines the daemon sends, without their newline, until it hangs up."""
    buf = bytearray()
    start = 0
    while True:
        i = buf.find(b"\n", start)
        if i >= 0:
            line = bytes(buf[:i])
            del buf[:i + 1]
            start = 0
            yield line
            continue
        start = len(buf)
        chunk = conn.recv(READ_CHUNK)
        if not chunk:
            return
        buf += chunk


class Agent:
    def __init__(self):
        self.listener = _socket.socket(fileno=LISTEN_FD)
        self.conn = None
        self.undelivered = None
        self.preload_error = None
        self.preloading = False
        # The supervisor turns non-dumpable before code not its own runs:
        # the preload code, or else the first execution (after the first
        # pong, off the start's clock: ctypes takes milliseconds to import).
        self.hardened = False
        if PRELOAD:
            self.harden()
        self.worker = Worker()
        self.worker.start()
        self.preload()

    def harden(self):
        if not self.hardened:
            set_not_dumpable()
            self.hardened = True

    def preload(self):
        """Runs the template's preload code in a new worker, quietly."""
        if not PRELOAD or self.preloading:
            return
        self.preloading = True
        try:
            done = self.exec_python({"code": PRELOAD, "timeout": PRELOAD_TIMEOUT, "max_output": 65536},
                                    send=lambda m: None)
        finally:
            self.preloading = False
        if done["status"] != "ok":
            self.preload_error = done.get("error") or {
                "name": done["status"], "value": "the preload code did not finish (status %s)" % done["status"],
                "traceback": ""}
            log("preload failed: %s: %s" % (self.preload_error.get("name"), self.preload_error.get("value")))

    def send(self, msg):
        if self.conn is None:
            return
        try:
            self.conn.sendall((json_dumps(msg) + "\n").encode())
        except OSError:
            # The daemon went away; finish the work, answer the next one.
            self.conn = None

    def serve(self):
        while True:
            fd, _ = self.listener._accept()
            self.conn = _socket.socket(fileno=fd)
            try:
                for line in read_lines(self.conn):
                    try:
                        req = json_loads(line)
                    except ValueError:
                        self.send({"type": "error", "message": "bad request line"})
                        continue
                    self.handle(req)
                    if self.conn is None:
                        break
            except OSError:
                pass
            finally:
                if self.conn is not None:
                    self.conn.close()
                self.conn = None
            reap_zombies()

    def handle(self, req):
        op = req.get("op")
        if op == "ping":
            if req.get("ready"):
                # Answer once the worker has finished starting (site,
                # imports) and the supervisor is hardened: a pooled
                # sandbox is then fully warm.
                self.exec_python({"code": "", "noop": True, "timeout": 60}, send=lambda m: None)
                self.harden()
            pong = {"type": "pong", "pid": os.getpid()}
            if self.undelivered is not None:
                pong["undelivered"] = self.undelivered
            if self.preload_error is not None:
                pong["preload_error"] = self.preload_error
            self.send(pong)
            if self.conn is not None:
                self.undelivered = None  # handed over
            self.harden()
        elif op == "exec":
            start = time.monotonic()
            if req.get("language") == "shell":
                done = self.exec_shell(req)
            else:
                done = self.exec_python(req)
            done["type"] = "done"
            done["id"] = str(req.get("id") or "")
            done["language"] = "shell" if req.get("language") == "shell" else "python"
            done["duration_ms"] = (time.monotonic() - start) * 1000.0
            self.send(done)
            if self.conn is None:
                # The daemon went away during the execution: keep how it
                # ended for the next one, without the outputs it streamed.
                done.pop("outputs", None)
                self.undelivered = done
        else:
            self.send({"type": "error", "message": "unknown op %r" % op})

    def exec_python(self, req, send=None):
        send = send or self.send
        limit = int(req.get("max_output", 1 << 20))
        timeout = float(req.get("timeout", 30))
        grace = float(req.get("grace", 1.0))
        w = self.worker
        caps = {w.out: Capture("stdout", send, limit), w.err: Capture("stderr", send, limit)}
        done = {"status": "ok", "exit_code": 0, "result": None, "error": None,
                "outputs": [], "truncated": False, "state_reset": False}
        if w.exited() is not None:
            # The last cell left no interpreter behind: start afresh.
            w.pid = 0
            w.stop()
            w.start()
            self.preload()
            done["state_reset"] = True
            caps = {w.out: Capture("stdout", send, limit), w.err: Capture("stderr", send, limit)}
        # Output left over from background processes of earlier cells, and
        # control lines nobody asked for, belong to nobody: drop them.
        for fd in (w.out, w.err, w.ctrl_r):
            drain(fd, Capture("", lambda m: None, 0))
        w.ctrl_buf = b""
        w.stray = 0
        w.seq += 1
        token = os.urandom(16).hex()
        pending = (json_dumps({"code": req.get("code", ""), "env": req.get("env") or {},
                               "cwd": req.get("cwd") or "", "max_output": limit, "noop": bool(req.get("noop")),
                               "seq": w.seq, "token": token}) + "\n").encode()
        # Most requests fit the pipe: no select needed to send them.
        pending = write_some(w.ctrl_w, pending)
        deadline = time.monotonic() + timeout
        interrupted = False
        kill_at = None
        reply = None
        dead = False
        fds = [w.out, w.err, w.ctrl_r]
        while reply is None and not dead:
            now = time.monotonic()
            if not interrupted and now >= deadline:
                interrupted = True
                kill_at = now + grace
                try:
                    os.killpg(w.pid, signal.SIGINT)
                except OSError:
                    pass
            if kill_at is not None and now >= kill_at:
                break
            wait = (kill_at if kill_at is not None else deadline) - now
            try:
                ready, writable, _ = select.select(fds, [w.ctrl_w] if pending else [], [], max(wait, 0))
            except InterruptedError:
                continue
            if writable:
                pending = write_some(w.ctrl_w, pending)
            for fd in ready:
                if fd == w.ctrl_r:
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
                    reply = self.take_reply(w, token)
                elif not drain(fd, caps[fd]):
                    fds.remove(fd)
        for fd, cap in caps.items():
            drain(fd, cap)
            cap.finish()
        done["truncated"] = any(c.truncated for c in caps.values())
        if reply is not None:
            done["result"] = reply.get("result")
            done["error"] = reply.get("error")
            done["outputs"] = reply.get("outputs") or []
            if done["error"]:
                done["status"] = "error"
                done["exit_code"] = 1
            if interrupted:
                done["status"] = "timeout"
                done["exit_code"] = 124
            return done
        # The worker died, or ignored the interrupt: start over.
        status = None
        if dead:
            # No one can answer any more; a worker that closed its end and
            # runs on is killed below.
            status = reap(w.pid, 1.0)
            w.pid = 0
        w.stop()
        w.start()
        self.preload()
        done["state_reset"] = True
        if interrupted:
            done["status"] = "timeout"
            done["exit_code"] = 124
        elif status is not None and os.WIFSIGNALED(status):
            done["status"] = "killed"
            done["exit_code"] = 128 + os.WTERMSIG(status)
            done["error"] = {"name": "Killed", "value": "the interpreter was killed by signal %d (out of memory?)" % os.WTERMSIG(status), "traceback": ""}
        else:
            code = os.WEXITSTATUS(status) if status is not None and os.WIFEXITED(status) else 1
            done["status"] = "error"
            done["exit_code"] = code
            done["error"] = {"name": "SystemExit", "value": "the interpreter exited with status %d" % code, "traceback": ""}
        return done

    @staticmethod
    def take_reply(w, token):
        """The reply to the current request among the complete lines read,
        if any. Anything else is user code writing to the control pipe."""
        while b"\n" in w.ctrl_buf:
            head, w.ctrl_buf = w.ctrl_buf.split(b"\n", 1)
            try:
                msg = json_loads(head)
            except ValueError:
                msg = None
            if isinstance(msg, dict) and msg.get("seq") == w.seq and msg.get("token") == token:
                return msg
            if not head:
                continue
            if not w.stray:
                log("dropped a stray line on the worker's control pipe")  # once a cell: the log is on the host
            w.stray += 1
        if len(w.ctrl_buf) > 256 << 20:
            w.ctrl_buf = b""  # a line this long is not a reply
        return None

    def exec_shell(self, req):
        limit = int(req.get("max_output", 1 << 20))
        timeout = float(req.get("timeout", 30))
        env = dict(os.environ)
        env.update({str(k): str(v) for k, v in (req.get("env") or {}).items()})
        done = {"status": "ok", "exit_code": 0, "result": None, "error": None,
                "outputs": [], "truncated": False, "state_reset": False}
        import subprocess
        try:
            p = subprocess.Popen(["/bin/sh", "-c", req.get("code", "")],
                                 stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, cwd=req.get("cwd") or "/workspace",
                                 env=env, start_new_session=True, preexec_fn=raise_oom_score)
        except OSError as e:
            self.send({"type": "stderr", "data": "sh: %s\n" % e})
            done.update(status="error", exit_code=127)
            return done
        out, err = p.stdout.fileno(), p.stderr.fileno()
        os.set_blocking(out, False)
        os.set_blocking(err, False)
        caps = {out: Capture("stdout", self.send, limit), err: Capture("stderr", self.send, limit)}
        fds = [out, err]
        deadline = time.monotonic() + timeout
        timed_out = False
        while True:
            rc = p.poll()
            if rc is not None:
                break
            now = time.monotonic()
            if now >= deadline:
                timed_out = True
                try:
                    os.killpg(p.pid, signal.SIGKILL)
                except OSError:
                    pass
                p.wait()
                wait_group_gone(p.pid)
                break
            if not fds:
                time.sleep(min(0.01, deadline - now))
                continue
            try:
                ready, _, _ = select.select(fds, [], [], min(0.05, deadline - now))
            except InterruptedError:
                continue
            for fd in ready:
                if not drain(fd, caps[fd]):
                    fds.remove(fd)
        for fd, cap in caps.items():
            drain(fd, cap)
            cap.finish()
        p.stdout.close()
        p.stderr.close()
        reap_zombies()
        rc = p.returncode
        done["truncated"] = any(c.truncated for c in caps.values())
        if timed_out:
            done.update(status="timeout", exit_code=124)
        elif rc < 0:
            done.update(status="killed" if rc == -signal.SIGKILL else "error", exit_code=128 - rc)
        elif rc != 0:
            done.update(status="error", exit_code=rc)
        return done


def main():
    # PID 1 ignores signals it has no handler for; make sure Python's own
    # SIGINT handler does not give user code a way to stop the supervisor.
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGPIPE, signal.SIG_IGN)
    try:
        os.chdir("/workspace")
    except OSError:
        pass
    Agent().serve()


if __name__ == "__main__":
    main()
