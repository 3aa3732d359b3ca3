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


def write_some(fd, data):
    """Writes what the non-blocking fd takes of data; returns the rest."""
    try:
        return data[os.write(fd, data):]
    except BlockingIOError:
        return data
    except OSError:
        return b""  # a dead worker shows as end of file
