# sandboxd agent: what both of its processes speak. JSON lines, with the C
# half of json (the Python half imports enum and re: ~10 ms of every cold
# start), the daemon's line reader, non-blocking writes and the log.
#
# Imported by the supervisor (_sandboxd_agent) and by the worker
# (_sandboxd_worker); nothing here runs user code or forks.
import os

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

READ_CHUNK = 65536


def log(msg):
    """One line on fd 2: the agent's log on the host, for PID 1."""
    try:
        os.write(2, ("sandboxd-agent: %s\n" % msg).encode())
    except OSError:
        pass


class LineReader:
    """The lines the daemon sends, without their newline. Iterating reads
    the socket as needed, until the daemon hangs up; while an execution
    runs, the supervisor instead calls fill once the socket is readable and
    takes the complete lines. Both share one buffer."""

    def __init__(self, conn):
        self.conn = conn
        self.buf = bytearray()
        self.start = 0  # where the search for the next newline resumes

    def fileno(self):
        return self.conn.fileno()

    def fill(self):
        """Reads once from the socket (blocking only if nothing is there);
        returns False at end of file."""
        chunk = self.conn.recv(READ_CHUNK)
        if not chunk:
            return False
        self.buf += chunk
        return True

    def take(self):
        """The next complete line, or None."""
        i = self.buf.find(b"\n", self.start)
        if i < 0:
            self.start = len(self.buf)
            return None
        line = bytes(self.buf[:i])
        del self.buf[:i + 1]
        self.start = 0
        return line

    def __iter__(self):
        while True:
            line = self.take()
            if line is not None:
                yield line
            elif not self.fill():
                return


def write_some(fd, data):
    """Writes what the non-blocking fd takes of data; returns the rest."""
    try:
        return data[os.write(fd, data):]
    except BlockingIOError:
        return data
    except OSError:
        return b""  # a dead worker shows as end of file
