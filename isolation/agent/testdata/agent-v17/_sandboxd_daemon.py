# sandboxd agent: the daemon's connection, in the supervisor. The daemon
# connects to an inherited listening Unix socket (LISTEN_FD; the socket file
# lives on the host, out of the sandbox's reach, so a restarted daemon can
# reconnect; under gVisor, which passes no descriptors, to one made at
# LISTEN_PATH, in a folder of the host's). One connection at a time; the
# agent (_sandboxd_agent) answers its requests, and executions read it while
# they run (Daemon.read).
#
# Daemon protocol (version PROTOCOL): one JSON object per line each way.
#   -> {"op":"ping","ready":B?}
#   <- {"type":"pong","pid":N,"protocol":N,"undelivered":{done}?,"preload_error":{}?}
#   -> {"op":"exec","id":S,"language":"python"|"shell","code":S,"timeout":F,
#       "env":{},"cwd":S,"max_output":N,"max_answer":N,"grace":F}
#   <- {"type":"stdout"|"stderr","data":S}*, {"type":"display","output":{}}*  then
#   <- {"type":"done","id":S,"language":S,"status":S,"exit_code":N,"result":S|null,
#       "error":{}|null,"outputs":[],"truncated":B,"state_reset":B,"duration_ms":F}
#   -> {"op":"interrupt","id":S}   while execution S runs (version 3 on)
#   -> {"op":"reclaim"}   at any time (version 6 on)
# A reclaim kills the sandbox's process with the most resident memory but
# PID 1, as the kernel's OOM killer would: the daemon sends it when the
# sandbox reaches its memory limit and no kernel enforces it inside (gVisor).
# It has no answer of its own; the execution whose process it was answers
# as one the OOM killer hit (the interpreter: "killed", state reset).
# An interrupt stops the execution as a Python timeout does: SIGINT to the
# worker's (or the shell command's) process group, repeated while it runs
# (see _sandboxd_cells and _sandboxd_shell), then the kill once the grace
# has passed; its done then says "interrupted" (exit code 130). It has no
# answer of its own. One for another execution (it ended meanwhile), or
# while nothing runs, is dropped; a second one, or one during the timeout's
# grace, changes nothing. Any other request while an execution runs is
# answered with an error line: the daemon sends one at a time.
# max_answer (version 4 on) bounds the whole answer: output as it streams,
# then the error, the result and the outputs draw on it; what does not fit
# is dropped and "truncated" is true.
# A display line (version 9 on) is an output a cell's display() made, sent
# as it is made, in order with the output around it: {"mime","data",
# "bundle"?}, bounded by max_answer as it comes (one that does not fit is
# dropped, and the answer says truncated). The done's outputs are those
# that were not displayed so: the last expression's rich representations,
# then the figures left open. Any output may have a "bundle" (mime ->
# data, text as text, binary as base64).
# Versions 1 and 2 read nothing from the daemon while an execution ran, and
# knew no interrupt; otherwise (and for 1, no "protocol" in the pong) the
# exchange is the same. The daemon may go away (restart, crash, upgrade) and
# come back on a new connection; the sandbox runs on meanwhile. An execution
# whose answer could not be sent is kept (the last one only, without its
# output) and handed over in the next pong, so the daemon can record how it
# ended.
import _socket
import os

import _sandboxd_procs as procs
from _sandboxd_consts import LISTEN_FD, LISTEN_PATH, OP_INTERRUPT, OP_RECLAIM, TYPE_ERROR
from _sandboxd_wire import LineReader, json_dumps, json_loads


def inherited(fd):
    """The listener the runtime passed on fd (the daemon made it on the
    host), or None."""
    try:
        s = _socket.socket(fileno=fd)
    except OSError:
        return None
    try:
        if s.getsockopt(_socket.SOL_SOCKET, _socket.SO_ACCEPTCONN):
            return s
    except OSError:
        pass
    s.detach()
    return None


def listen_at(path):
    """A listener made at path, in a folder the host binds in (gVisor
    passes no descriptors), which the daemon connects to."""
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    s = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    s.bind(path)
    s.listen(16)
    return s


class Daemon:
    """The supervisor's end of the daemon's connection: the listener, and
    the connection being served (conn, read through reader), if any."""

    def __init__(self):
        # inherited: the daemon made the listener (runc); it made the
        # spawner's too then, and the agent makes none at a path.
        self.listener = inherited(LISTEN_FD)
        self.inherited = self.listener is not None
        if self.listener is None:
            self.listener = listen_at(LISTEN_PATH)
        self.conn = None
        self.reader = None  # the LineReader of conn

    def accept(self):
        """Waits for the daemon's next connection; returns its reader."""
        fd, _ = self.listener._accept()
        self.conn = _socket.socket(fileno=fd)
        self.reader = LineReader(self.conn)
        return self.reader

    def send(self, msg):
        if self.conn is None:
            return
        try:
            self.conn.sendall((json_dumps(msg) + "\n").encode())
        except OSError:
            # The daemon went away; finish the work, answer the next one.
            self.conn = None

    def hang_up(self):
        if self.conn is not None:
            try:
                self.conn.close()
            except OSError:
                pass
        self.conn = self.reader = None

    def parse(self, line):
        """The request on line, or None (answered with an error line)."""
        try:
            req = json_loads(line)
        except ValueError:
            req = None
        if not isinstance(req, dict):
            self.send({"type": TYPE_ERROR, "message": "bad request line"})
            return None
        return req

    def read(self, exec_id, fill=True):
        """Reads what the daemon sent while execution exec_id runs (None:
        one of the agent's own, which nothing interrupts), once its socket
        is readable, or with fill False only the lines read already: returns
        whether it asked to interrupt the execution. See the protocol above
        for the rest. A daemon that hung up is let go; the execution runs
        on, and its end is kept for the next one."""
        if exec_id is None or self.reader is None:
            return False
        more = True
        if fill:
            try:
                more = self.reader.fill()
            except OSError:
                more = False
        interrupt = False
        while self.reader is not None:
            line = self.reader.take()
            if line is None:
                break
            req = self.parse(line)
            if req is None:
                continue
            op = req.get("op")
            if op == OP_INTERRUPT:
                interrupt = interrupt or str(req.get("id") or "") == exec_id
            elif op == OP_RECLAIM:
                procs.kill_largest()
            else:
                self.send({"type": TYPE_ERROR, "message": "op %r while an execution runs" % op})
        if not more:
            self.hang_up()
        return interrupt

    def watched(self, exec_id):
        """The daemon's socket, as a list for select, while execution
        exec_id (None: the agent's own, unwatched) may be interrupted."""
        if exec_id is None or self.reader is None:
            return []
        return [self.reader.fileno()]
