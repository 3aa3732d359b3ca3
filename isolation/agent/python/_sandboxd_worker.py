# sandboxd agent: the worker, the interpreter the supervisor forks to run
# cells. Everything here runs in the forked child, which runs user code; its
# globals persist between executions.
#
# Its fds 1 and 2 are pipes the supervisor reads, so output of child
# processes is captured too; requests come on one control pipe and replies
# go back on another (high fds, CTRL_FD_BASE on). Nothing the worker sends
# is trusted by the supervisor; see _sandboxd_cells.
#
# A cell costs the worker two system calls (read the request, write the
# reply; fds 1 and 2 are put back after the reply is out): each is a trap
# under gVisor.
import _signal as signal
import _thread
import builtins
import os
import sys

import _sandboxd_display as rich
import _sandboxd_fork as fork
from _sandboxd_consts import MODULES
from _sandboxd_wire import READ_CHUNK, json_dumps, json_loads, log

CTRL_FD_BASE = 710  # high fds: the worker's control pipes, then copies of fds 1 and 2
FORK_FD = CTRL_FD_BASE + 4  # then the fork channel (see _sandboxd_fork)


def raise_oom_score():
    # Make the supervisor's children the OOM killer's first choice.
    try:
        with open("/proc/self/oom_score_adj", "w") as f:
            f.write("1000")
    except OSError:
        pass


def run(out_w, err_w, req_r, rep_w, chan_w):
    """The forked child, from the fork on: takes its fds from the pipes the
    supervisor made (stdout, stderr, requests, replies) and the fork
    channel, and serves cells. Never returns."""
    try:
        os.setsid()
        null = os.open("/dev/null", os.O_RDONLY)
        os.dup2(null, 0)
        take_fds((out_w, err_w, req_r, rep_w, chan_w))
        os.closerange(3, CTRL_FD_BASE)
        os.closerange(FORK_FD + 1, 65536)
        worker_main(CTRL_FD_BASE, CTRL_FD_BASE + 1)
    except BaseException as e:  # noqa: BLE001
        log("worker: %r" % e)
    os._exit(1)


def exec_node(node, fds):
    """The forked child of a JavaScript context: its fds where the Python
    worker has them, then node running the agent's JavaScript worker
    (_sandboxd_node.js, beside this module). Never returns."""
    try:
        os.setsid()
        null = os.open("/dev/null", os.O_RDONLY)
        os.dup2(null, 0)
        take_fds(fds)
        os.closerange(3, CTRL_FD_BASE)
        os.closerange(FORK_FD + 1, 65536)
        for fd in range(CTRL_FD_BASE, FORK_FD + 1):
            os.set_inheritable(fd, True)
        raise_oom_score()
        os.execv(node, [node, os.path.join(os.path.dirname(__file__), "_sandboxd_node.js")])
    except BaseException as e:  # noqa: BLE001
        log("javascript worker: %r" % e)
    os._exit(1)


def exec_main():
    """The worker exec'd by the native supervisor (isolation/agent/
    supervisor), not forked: it put fds 0, 1 and 2 and the control pipes
    (CTRL_FD_BASE on) where run would, and made the session. Never
    returns."""
    try:
        for fd in range(CTRL_FD_BASE, FORK_FD + 1):
            os.set_inheritable(fd, False)
        worker_main(CTRL_FD_BASE, CTRL_FD_BASE + 1)
    except BaseException as e:  # noqa: BLE001
        log("worker: %r" % e)
    os._exit(1)


def take_fds(fds):
    """Puts the worker's fds (stdout, stderr, requests, replies, the fork
    channel) where it serves cells from."""
    out_w, err_w, req_r, rep_w, chan_w = fds
    os.dup2(out_w, 1)
    os.dup2(err_w, 2)
    for i, fd in enumerate((req_r, rep_w, out_w, err_w, chan_w)):
        os.dup2(fd, CTRL_FD_BASE + i)
        os.set_inheritable(CTRL_FD_BASE + i, False)


def become_copy(req):
    """In a copy forked for a new context: its own fds, its folder, and a
    fresh request buffer; it no longer counts as a fork of user code's."""

    def become(fds):
        take_fds(fds)
        REQ_BUF[0] = b""
        FORKED[0] = False
        cwd = req.get("cwd")
        if cwd:
            try:
                os.chdir(cwd)
            except OSError as e:
                log("context folder %r: %s" % (cwd, e))
    return become


def worker_main(ctrl_r, ctrl_w):
    """Executes cells until the request pipe closes."""
    signal.signal(signal.SIGINT, on_sigint)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    raise_oom_score()
    reset_std_streams()
    sys.meta_path.insert(0, LinecacheFinder)
    import site
    if sys.flags.no_site:
        site.main()  # site-packages, .pth files, exit() and help()
    sys.stdin = open(0, "r", closefd=False)
    sys.__stdin__ = sys.stdin
    # A fork made by user code that returns here must not answer: the
    # child learns it is one from the fork hook (every fork of Python's
    # runs it: os.fork, forkpty, multiprocessing), not from a getpid per
    # cell.
    os.register_at_fork(after_in_child=forked)
    sys.argv = [""]
    # User code sees neither the agent's folder nor its modules: an
    # agent.py (or _sandboxd_agent.py) of its own imports as it would
    # anywhere. The folder is the one these modules came from (the
    # runtime's Dir in a sandbox).
    here = os.path.dirname(__file__)
    while here in sys.path:
        sys.path.remove(here)
    for name in MODULES:
        sys.modules.pop(name, None)
    if "" not in sys.path:
        sys.path.insert(0, "")
    # The cells' namespace is the __main__ module, as in a notebook: what
    # pickle (and multiprocessing) look up there is what the cells define.
    main = type(sys)("__main__")
    main.__dict__["__builtins__"] = builtins
    builtins.display = display
    MAIN_THREAD[0] = _thread.get_ident()
    sys.modules["__main__"] = main
    ns = main.__dict__
    cell = 0
    while True:
        line = read_line(ctrl_r)
        try:
            req = json_loads(line)
        except ValueError:
            continue  # an empty line: an acknowledgement no display waited for
        if fork.COPIES:
            fork.reap_copies()
        if req.get("fork"):
            # A context copied from this one: the copy serves on from
            # here (its first request comes on its own pipe), the source
            # replies with its pid.
            try:
                pid = fork.fork_worker(FORK_FD, become_copy(req))
            except OSError as e:
                pid = -1
                log("fork a context: %s" % e)
            if pid is None:
                continue
            reply = {"pid": pid}
        elif req.get("noop"):
            # The supervisor asks whether the worker is up, or, after
            # stopping a cell, clears a SIGINT that came too late for it.
            PENDING[0] = False
            reply = {}
        else:
            cell += 1
            seq, token = req.get("seq"), req.get("token")
            if req.get("reseed"):
                reseed()

            def send_display(out):
                # Tokened as the reply is: the supervisor drops lines
                # without it, so user code writing to the control pipe
                # forges nothing. The supervisor drains fds 1 and 2 before
                # it relays the line, then says so with an empty line:
                # what the cell writes after display() comes after.
                send_line(ctrl_w, {"display": out, "seq": seq, "token": token})
                read_line(ctrl_r)

            reply = run_cell(ns, req, cell, interruptible=True, send_display=send_display)
        if FORKED[0]:
            # A fork made by user code came back here: only the worker answers.
            os._exit(0)
        reply["seq"], reply["token"] = req.get("seq"), req.get("token")
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:  # noqa: BLE001 - user code may have broken it
                pass
        try:
            send_line(ctrl_w, reply)
        except OSError:
            os._exit(1)
        # After the reply, not on its path: the next cell starts with the
        # agent's fds 1 and 2 whatever this one did to them.
        reset_std_streams()


def reseed():
    """Reseeds the random generators user code may have drawn from, from
    the kernel's entropy: in a copy of a sandbox restored from a
    checkpoint, which would otherwise draw the numbers every other copy
    draws (see _sandboxd_quiesce)."""
    for name in ("random", "numpy.random"):
        m = sys.modules.get(name)
        if m is None:
            continue
        try:
            m.seed()
        except Exception as e:  # noqa: BLE001 - user code may have replaced it
            log("reseed %s: %r" % (name, e))


# REQ_BUF[0]: what was read from the request pipe past the last line.
REQ_BUF = [b""]


def read_line(fd):
    """The next line from the supervisor, without its newline."""
    buf = REQ_BUF[0]
    while b"\n" not in buf:
        try:
            chunk = os.read(fd, READ_CHUNK)
        except BlockingIOError:
            os.set_blocking(fd, True)  # user code changed it
            continue
        if not chunk:
            os._exit(0)
        buf += chunk
        REQ_BUF[0] = buf
    line, REQ_BUF[0] = buf.split(b"\n", 1)
    return line


def send_line(fd, msg):
    """Writes msg to the supervisor's control pipe. The leading newline ends
    whatever user code left half-written on the pipe, so that msg starts a
    line of its own."""
    data = ("\n" + json_dumps(msg) + "\n").encode()
    while data:
        try:
            n = os.write(fd, data)
        except BlockingIOError:
            os.set_blocking(fd, True)  # user code changed it
            continue
        data = data[n:]


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

# FORKED[0]: this process is a fork of the worker's, made by user code.
FORKED = [False]


def forked():
    FORKED[0] = True


# SIGINT interrupts cells, and only cells. One that comes while no cell runs
# is kept (PENDING) for the next cell, which then stops before any of its
# code runs: the supervisor signals as soon as it has to stop a cell,
# without waiting for the worker to say the cell began. One that came too
# late for the cell it was meant for is cleared by a noop request, which
# the supervisor sends after every cell it signalled: the signal was
# pending before that request was written, so its handler has run when the
# worker reads it. One handler for both states costs a cell no system call,
# where switching handlers would cost two.
#
# A cell gets one KeyboardInterrupt (STOPPED): the supervisor repeats its
# SIGINT until the cell ends, because Python can sleep through one. Its C
# handler only notes the signal; the Python handler runs at the next check
# between bytecodes, and a signal that lands after the last check before a
# blocking call (time.sleep, a read) waits for that call to return. The
# repeat interrupts the call; the ones after it must not interrupt the
# cell's own clean-up (an except or finally).
IN_CELL = [False]
PENDING = [False]
STOPPED = [False]


def on_sigint(signum, frame):
    if IN_CELL[0]:
        if STOPPED[0]:
            return
        STOPPED[0] = True
        raise KeyboardInterrupt
    PENDING[0] = True


def own_sigint():
    """Puts on_sigint back if user code changed SIGINT's handler."""
    if signal.getsignal(signal.SIGINT) is not on_sigint:
        signal.signal(signal.SIGINT, on_sigint)


# DISPLAY[0]: where display() sends an output while a cell runs (None:
# into the reply's outputs, in order).
DISPLAY = [None]


def display(*objs, **kwargs):
    """Shows each of objs as a rich output, now: the cells' builtin, as
    IPython's display. Its keyword arguments (IPython's raw, include, ...)
    are taken and ignored."""
    if FORKED[0]:
        return  # a fork of the cell's: only the worker displays
    for obj in objs:
        out = rich.output_of(obj, LIMIT[0])
        if out is None:
            continue
        send = DISPLAY[0]
        if send is None or _thread.get_ident() != MAIN_THREAD[0]:
            # Another thread's waits for no acknowledgement, which the
            # cell's could read, or the next request: its outputs come
            # with the reply, if the cell has not ended.
            CELL_OUTPUTS.append(out)
            continue
        # What the cell printed before comes before it: in the pipes
        # before the line is (the supervisor drains them first).
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:  # noqa: BLE001 - user code may have broken it
                pass
        try:
            send(out)
        except OSError:
            os._exit(1)


# The running cell's cap on text (max_output), and its outputs display()
# kept for the reply (no DISPLAY[0]: in the unit tests).
LIMIT = [1 << 20]
CELL_OUTPUTS = []

# MAIN_THREAD[0]: the thread that runs cells.
MAIN_THREAD = [_thread.get_ident()]


# Cells' sources for linecache, where tracebacks and inspect read them:
# kept here until something imports linecache, which then gets them as it
# loads (LinecacheFinder). An idle worker does without linecache and what
# it imports (tokenize, re, enum: ~0.6 MB).
SOURCES = {}


def register_source(name, code):
    entry = (len(code), None, code.splitlines(True), name)
    linecache = sys.modules.get("linecache")
    if linecache is not None and isinstance(getattr(linecache, "cache", None), dict):
        linecache.cache[name] = entry
    else:
        SOURCES[name] = entry


class LinecacheFinder:
    """On sys.meta_path until linecache is imported: finds it where the
    path finder would, and fills its cache once it has loaded."""

    @staticmethod
    def find_spec(name, path=None, target=None):
        if name != "linecache":
            return None
        try:
            sys.meta_path.remove(LinecacheFinder)
        except ValueError:
            pass
        import importlib.machinery
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is not None and spec.loader is not None:
            spec.loader = LinecacheLoader(spec.loader)
        return spec


class LinecacheLoader:
    """The real loader, and then the cells' sources into the cache."""

    def __init__(self, loader):
        self.loader = loader

    def create_module(self, spec):
        return self.loader.create_module(spec)

    def exec_module(self, module):
        # The module keeps the real loader (reload, get_source).
        module.__loader__ = module.__spec__.loader = self.loader
        self.loader.exec_module(module)
        module.cache.update(SOURCES)
        SOURCES.clear()


def run_cell(ns, req, cell, interruptible=False, send_display=None):
    """Runs one cell in ns. In the worker (interruptible) SIGINT interrupts
    the cell, and only the cell (see on_sigint). send_display gets each
    output display() makes, as it is made; without it, they lead the
    reply's outputs."""
    # _ast, not ast: the C half has all a cell needs, and an idle worker
    # keeps megabytes less (traceback, too, is imported at the first error).
    import _ast
    code = req.get("code", "")
    limit = int(req.get("max_output", 1 << 20))
    env = req.get("env") or {}
    cwd = req.get("cwd") or ""
    name = "<cell-%d>" % cell
    register_source(name, code)
    saved_env = {k: os.environ.get(k) for k in env}
    saved_cwd = None
    reply = {"result": None, "error": None, "outputs": []}
    DISPLAY[0] = send_display
    LIMIT[0] = limit
    del CELL_OUTPUTS[:]
    last_out = None
    try:
        if interruptible:
            own_sigint()
            STOPPED[0] = False
            IN_CELL[0] = True
            if PENDING[0]:
                PENDING[0] = False
                STOPPED[0] = True
                raise KeyboardInterrupt
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
                    reply["truncated"] = True
                reply["result"] = r
                # Its _repr_*_ methods are the cell's code: a stop
                # interrupts them as it would the cell.
                last_out = result_output(value, limit)
    except BaseException as e:  # noqa: BLE001 - every exception is the user's
        tb = e.__traceback__
        # Drop the agent's own frames: the user's traceback starts in the cell.
        while tb is not None and tb.tb_frame.f_code.co_filename != name:
            tb = tb.tb_next
        # Nor does it end in on_sigint: an interrupt is the cell's, where
        # it stopped.
        t = tb
        while t is not None and t.tb_next is not None:
            if t.tb_next.tb_frame.f_code is on_sigint.__code__:
                t.tb_next = None
                break
            t = t.tb_next
        import traceback
        text = "".join(traceback.format_exception(type(e), e, tb))
        print(text, end="", file=sys.stderr)
        reply["error"] = {"name": type(e).__name__, "value": str(e), "traceback": text}
    finally:
        DISPLAY[0] = None
        if interruptible:
            IN_CELL[0] = False
            own_sigint()
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
    room = int(req.get("max_answer") or 4 << 20) - len(reply["result"] or "")
    # The last expression's rich representations (Jupyter's
    # execute_result), beside its repr in result; then the figures.
    outs = list(CELL_OUTPUTS)
    del CELL_OUTPUTS[:]
    if last_out is not None and reply["error"] is None:
        outs.append(last_out)
    kept = []
    for o in outs:
        n = rich.output_size(o)
        if n > room:
            reply["truncated"] = True
            continue
        room -= n
        kept.append(o)
    figures, cut = collect_figures(room)
    reply["outputs"] = kept + figures
    if cut:
        reply["truncated"] = True
    return reply


def result_output(value, limit):
    """The last expression's value as an output, if it has more to show
    than its repr (a DataFrame's HTML, a figure pyplot does not hold). A
    figure pyplot holds is left to collect_figures, where it always was."""
    plt = sys.modules.get("matplotlib.pyplot")
    mf = sys.modules.get("matplotlib.figure")
    if plt is not None and mf is not None and isinstance(value, getattr(mf, "Figure", ())):
        try:
            if getattr(value, "number", None) in plt.get_fignums():
                return None
        except Exception:  # noqa: BLE001
            pass
    return rich.output_of(value, limit, rich_only=True)


def collect_figures(room):
    """The open figures as PNG outputs, those that fit in room bytes (the
    rest is dropped: cut is True), and closes them all."""
    plt = sys.modules.get("matplotlib.pyplot")
    if plt is None:
        return [], False
    import base64
    import io
    out = []
    cut = False
    try:
        for num in plt.get_fignums():
            fig = plt.figure(num)
            b = io.BytesIO()
            fig.savefig(b, format="png")
            data = base64.b64encode(b.getvalue()).decode()
            if len(data) > room:
                cut = True
                continue
            room -= len(data)
            out.append({"mime": "image/png", "data": data})
        plt.close("all")
    except Exception as e:  # noqa: BLE001
        log("figure capture: %s" % e)
    return out, cut
