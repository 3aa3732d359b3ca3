# sandboxd agent: an execution's answer, in the supervisor. What a cell or a
# command writes to its stdout and stderr is forwarded to the daemon as it
# comes (Capture), each stream up to max_output; max_answer (version 4 on)
# bounds the whole answer: output as it streams, then the error, the result
# and the outputs draw on it (Budget); what does not fit is dropped and the
# answer says "truncated". Both kinds of execution (_sandboxd_cells,
# _sandboxd_shell) answer through these.
import codecs
import os

import _sandboxd_display as rich
from _sandboxd_consts import STATUS_INTERRUPTED, STATUS_TIMEOUT
from _sandboxd_wire import READ_CHUNK

# The exit code of an execution its timeout, or the daemon's interrupt,
# stopped, whatever the code did on the way.
STOPPED_EXIT_CODE = {STATUS_TIMEOUT: 124, STATUS_INTERRUPTED: 130}

# The default bound of a whole answer, for a daemon that does not say
# (before version 4): the contract's default max_answer_bytes.
DEFAULT_MAX_ANSWER = 4 << 20


class Budget:
    """What is left of an execution's whole answer (max_answer): stdout,
    stderr, the result and every output draw on it, in the order they come;
    what does not fit is dropped and the answer says truncated."""

    def __init__(self, n):
        self.left = max(int(n), 0)
        self.cut = False

    def take(self, n):
        """How many of n bytes fit; the rest is cut."""
        k = min(n, self.left)
        self.left -= k
        if k < n:
            self.cut = True
        return k

    def text(self, s):
        """s, cut to what fits in UTF-8 (at a character boundary)."""
        b = s.encode("utf-8", "replace")
        k = self.take(len(b))
        return s if k == len(b) else b[:k].decode("utf-8", "ignore")

    def error(self, e):
        """An exception's fields, each cut to what fits (the name to 256
        bytes, whatever is left)."""
        if not isinstance(e, dict):
            return None
        out = {}
        for k in ("name", "value", "traceback"):
            v = str(e.get(k) or "")
            if k == "name" and len(v) > 256:
                v, self.cut = v[:256], True
            out[k] = v if k == "name" else self.text(v)
        return out

    def outputs(self, outs):
        """The outputs that fit whole; the others are dropped."""
        kept = []
        for o in outs if isinstance(outs, list) else []:
            o = self.output(o)
            if o is not None:
                kept.append(o)
        return kept

    def output(self, o):
        """o, well-formed, if it fits whole (it is then counted); else
        None."""
        o = clean_output(o)
        if o is None:
            return None
        size = rich.output_size(o)
        if size > self.left:
            self.cut = True
            return None
        self.left -= size
        return o


def clean_output(o):
    """An output the worker sent, with only the fields and types of one;
    None if it is none."""
    if not isinstance(o, dict) or not isinstance(o.get("mime"), str) or not isinstance(o.get("data"), str):
        return None
    out = {"mime": o["mime"], "data": o["data"]}
    b = o.get("bundle")
    if isinstance(b, dict):
        b = {k: v for k, v in b.items() if isinstance(k, str) and isinstance(v, str)}
        if b:
            out["bundle"] = b
    return out


def budget_of(req):
    return Budget(req.get("max_answer") or DEFAULT_MAX_ANSWER)


class Capture:
    """Forwards one output stream to the daemon, up to its cap and what the
    answer's budget has left."""

    def __init__(self, kind, send, limit, budget=None):
        self.kind = kind
        self.send = send
        self.limit = limit
        self.budget = budget if budget is not None else Budget(limit)
        self.sent = 0
        self.truncated = False
        self.dec = codecs.getincrementaldecoder("utf-8")(errors="replace")

    def feed(self, data):
        n = self.budget.take(min(len(data), max(self.limit - self.sent, 0)))
        if n < len(data):
            data = data[:n]
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


def discard(fd):
    """Reads fd until it would block, keeping nothing."""
    drain(fd, Capture("", lambda m: None, 0))
