"""Attach: a command in the sandbox with its standard streams on this
connection (sandboxctl exec -i / -it, docker's exec).

POST /v1/sessions/{id}/attach asks, with Connection: Upgrade and Upgrade:
sandboxd-attach/1, for the connection to be taken over. A refusal is an
ordinary error answer; success is 101, and then both sides send frames: a
type byte, a 4-byte big-endian length, the payload (api/attach.go). The
client sends stdin (0), its end (4) and terminal resizes (5); the daemon
the command's stdout (1) and stderr (2), and last its exit status (3).

http.client has no way to hand over a connection after a 101, so the
request is written and its answer's head read here, over a socket the
transport connected as it connects every call.
"""

from __future__ import annotations

import errno
import json
import socket
import struct
import threading
import time
from typing import Any, Iterator, Mapping, Sequence

from ._api_processes import command_request
from ._transport import _MAX_ERROR_BODY, VERSION, Caller, Transport, _mapped, api_path, failure
from .errors import ProtocolError, RequestTimeout, Unavailable

UPGRADE = "sandboxd-attach/1"
"""The protocol an attach upgrades its connection to."""

FRAME_STDIN = 0
FRAME_STDOUT = 1
FRAME_STDERR = 2
FRAME_EXIT = 3
FRAME_CLOSE_STDIN = 4
FRAME_RESIZE = 5

MAX_FRAME = 1 << 20
"""The longest payload of a frame, either way."""

STREAMS = {FRAME_STDOUT: "stdout", FRAME_STDERR: "stderr"}
"""The output frames, by the name read() gives their chunks."""

# An answer's head longer than this is not the daemon's.
_MAX_HEAD = 64 << 10

_HEADER = struct.Struct(">BI")


def encode_frame(typ: int, payload: bytes = b"") -> bytes:
    """One frame: its type, its length (4 bytes, big-endian), its payload."""
    if len(payload) > MAX_FRAME:
        raise ValueError(f"a frame of {len(payload)} bytes is over the limit of {MAX_FRAME}")
    return _HEADER.pack(typ, len(payload)) + payload


def resize_payload(rows: int, cols: int) -> bytes:
    """A resize frame's payload: rows, then columns, 2 bytes each."""
    for what, v in (("rows", rows), ("cols", cols)):
        if not 0 <= v <= 0xFFFF:
            raise ValueError(f"{what} must be 0 to 65535, not {v!r}")
    return struct.pack(">HH", rows, cols)


def parse_exit(payload: bytes) -> int:
    """An exit frame's status (4 bytes, big-endian, signed: 128+N for a signal N)."""
    if len(payload) != 4:
        raise ProtocolError(f"sandboxd sent an exit frame of {len(payload)} bytes, not 4")
    return int(struct.unpack(">i", payload)[0])


def attach_request(
    argv: Sequence[str],
    *,
    tty: bool = False,
    rows: int | None = None,
    cols: int | None = None,
    env: Mapping[str, str] | None = None,
    cwd: str | None = None,
) -> dict[str, Any]:
    """The body of POST …/attach (api.AttachRequest); None fields absent."""
    body = command_request(argv, env, cwd)
    if tty:
        body["tty"] = True
    if rows is not None:
        body["rows"] = int(rows)
    if cols is not None:
        body["cols"] = int(cols)
    return body


class _Reader:
    """Bytes of a socket, read as asked: an answer's head, then frames."""

    def __init__(self, sock: socket.socket, where: str) -> None:
        self._sock = sock
        self._buf = bytearray()
        self._where = where

    def _fill(self) -> bool:
        b = self._sock.recv(1 << 16)
        if not b:
            return False
        self._buf += b
        return True

    def head(self) -> tuple[int, str, dict[str, str]]:
        """An HTTP answer's status, reason and headers (names lowercase)."""
        while True:
            end = self._buf.find(b"\r\n\r\n")
            if end >= 0:
                break
            if len(self._buf) > _MAX_HEAD:
                raise ProtocolError(f"sandboxd at {self._where} answered the attach with a head over {_MAX_HEAD} bytes")
            if not self._fill():
                raise ProtocolError(f"sandboxd at {self._where} closed the connection before it answered the attach")
        head = bytes(self._buf[:end]).decode("latin-1")
        del self._buf[: end + 4]
        lines = head.split("\r\n")
        parts = lines[0].split(" ", 2)
        if len(parts) < 2 or not parts[0].startswith("HTTP/") or not parts[1].isdigit():
            raise ProtocolError(f"sandboxd at {self._where} answered the attach with {lines[0]!r}, not an HTTP status")
        headers: dict[str, str] = {}
        for ln in lines[1:]:
            k, sep, v = ln.partition(":")
            if sep:
                headers[k.strip().lower()] = v.strip()
        return int(parts[1]), parts[2] if len(parts) > 2 else "", headers

    def exact(self, n: int) -> bytes | None:
        """n bytes; None at the end of the stream before any of them."""
        while len(self._buf) < n:
            if not self._fill():
                if not self._buf:
                    return None
                raise ProtocolError(f"sandboxd at {self._where} closed the connection in the middle of a frame")
        out = bytes(self._buf[:n])
        del self._buf[:n]
        return out

    def body(self, headers: dict[str, str]) -> bytes:
        """A (refusal's) body, by its length, chunked, or up to the close;
        at most an error's worth of it."""
        if "chunked" in headers.get("transfer-encoding", "").lower():
            out = bytearray()
            while len(out) < _MAX_ERROR_BODY:
                line = self._line()
                size = int(line.split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    break
                out += self.exact(size + 2) or b""
                del out[len(out) - 2 :]
            return bytes(out)
        n = headers.get("content-length")
        if n is not None and n.isdigit():
            return self.exact(min(int(n), _MAX_ERROR_BODY)) or b""
        while len(self._buf) < _MAX_ERROR_BODY and self._fill():
            pass
        return bytes(self._buf[:_MAX_ERROR_BODY])

    def _line(self) -> bytes:
        while True:
            i = self._buf.find(b"\r\n")
            if i >= 0:
                out = bytes(self._buf[:i])
                del self._buf[: i + 2]
                return out
            if not self._fill():
                raise ProtocolError(f"sandboxd at {self._where} cut its answer to the attach")


class Attached:
    """A command in a session's sandbox whose standard streams are this
    connection. write() sends it input, close_stdin() ends it, resize()
    sets its terminal's size; read() yields its output as ("stdout" or
    "stderr", bytes) until it exits, and wait() answers its exit status
    (128+N for a signal N). close() (or leaving ``with``) hangs up, which
    ends a command still running. Input may be sent from another thread
    while one reads; output is read by one thread."""

    def __init__(self, sock: socket.socket, reader: _Reader, where: str, request_id: str | None = None) -> None:
        self._sock = sock
        self._r = reader
        self._where = where
        self._wlock = threading.Lock()
        self._closed = False
        self.request_id = request_id
        self.exit_code: int | None = None
        """The exit status, once read() or wait() met the end."""

    def write(self, data: bytes | str) -> None:
        """Sends input to the command (a str as UTF-8), in frames of at most
        1 MiB. It returns once the bytes are with the system, which the
        command reading slowly may delay; BrokenPipeError once the command
        ended."""
        if isinstance(data, str):
            data = data.encode()
        view = memoryview(data)
        for off in range(0, len(view), MAX_FRAME):
            self._send(FRAME_STDIN, bytes(view[off : off + MAX_FRAME]))

    def close_stdin(self) -> None:
        """Ends the command's input (EOF; with a terminal, ^D)."""
        self._send(FRAME_CLOSE_STDIN)

    def resize(self, rows: int, cols: int) -> None:
        """Sets the size of the command's terminal (with tty)."""
        self._send(FRAME_RESIZE, resize_payload(rows, cols))

    def _send(self, typ: int, payload: bytes = b"") -> None:
        frame = encode_frame(typ, payload)
        with self._wlock:
            if self.exit_code is not None:
                raise BrokenPipeError(f"the command exited with {self.exit_code}: it takes no more input")
            if self._closed:
                raise BrokenPipeError("the attach is closed")
            try:
                with _mapped(self._where, None):
                    self._sock.sendall(frame)
            except Unavailable as e:
                # As a write to a pipe whose reader left: the daemon closes
                # the connection once the command ended (read() still has
                # its exit status).
                if isinstance(e.__cause__, (BrokenPipeError, ConnectionResetError)):
                    raise BrokenPipeError(errno.EPIPE, "the attached command ended, or the daemon hung up: it takes no more input") from None
                raise

    def read(self, timeout: float | None = None) -> Iterator[tuple[str, bytes]]:
        """The command's output as it comes: ("stdout", bytes) and
        ("stderr", bytes) chunks (with a terminal, all is stdout), until it
        exits (``exit_code`` is then set). ``timeout`` bounds the whole
        read: past it, RequestTimeout, and the attach is closed (ending
        the command). A connection cut before the exit is ProtocolError."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.exit_code is None:
            if self._closed:
                raise ProtocolError("the attach was closed before the command ended")
            if deadline is None:
                # A read with no bound after one with a bound.
                self._sock.settimeout(None)
            else:
                left = deadline - time.monotonic()
                if left <= 0:
                    self.close()
                    raise RequestTimeout(f"the attached command ran on past {timeout:g} s: it was ended")
                self._sock.settimeout(left)
            try:
                with _mapped(self._where, timeout):
                    head = self._r.exact(_HEADER.size)
                    if head is None:
                        raise ProtocolError(f"sandboxd at {self._where} closed the connection before the command ended")
                    typ, n = _HEADER.unpack(head)
                    if n > MAX_FRAME:
                        raise ProtocolError(f"sandboxd sent a frame of {n} bytes, over the limit of {MAX_FRAME}: not the attach protocol")
                    payload = self._r.exact(n) if n else b""
                    if payload is None:
                        raise ProtocolError(f"sandboxd at {self._where} closed the connection in the middle of a frame")
            except RequestTimeout:
                self.close()
                raise RequestTimeout(f"the attached command ran on past {timeout:g} s: it was ended") from None
            if typ in STREAMS:
                yield STREAMS[typ], payload
            elif typ == FRAME_EXIT:
                self.exit_code = parse_exit(payload)
                # The last frame: the daemon is done with the connection.
                self.close()
            # Other types are a newer daemon's: skipped.

    def wait(self, timeout: float | None = None) -> int:
        """The command's exit status, once it exits; output not read yet
        is read and dropped (read() first to keep it)."""
        for _ in self.read(timeout):
            pass
        assert self.exit_code is not None
        return self.exit_code

    def close(self) -> None:
        """Hangs up: a command still running ends. A thread blocked writing
        or reading is woken (its call fails)."""
        if self._closed:
            return
        self._closed = True
        try:
            self._sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self._sock.close()

    def __enter__(self) -> Attached:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "open" if not self._closed else f"exited {self.exit_code}" if self.exit_code is not None else "closed"
        return f"Attached({state})"


def attach(t: Transport, path: str, body: dict[str, Any], timeout: float | None) -> Attached:
    """Sends the attach request on a connection of its own and answers the
    Attached once the daemon took the connection over (101). ``timeout``
    bounds the handshake alone: the command has none."""
    data = json.dumps(body).encode()
    head = (
        f"POST {path} HTTP/1.1\r\n"
        "Host: sandboxd\r\n"
        f"User-Agent: sandboxd-python/{VERSION}\r\n"
        "Connection: Upgrade\r\n"
        f"Upgrade: {UPGRADE}\r\n"
        "Content-Type: application/json\r\n"
        f"Content-Length: {len(data)}\r\n"
        "\r\n"
    ).encode()
    sock = t.connect(timeout)
    try:
        r = _Reader(sock, t.socket)
        with _mapped(t.socket, timeout):
            sock.sendall(head + data)
            status, reason, headers = r.head()
            if status != 101:
                raw = r.body(headers)
        if status != 101:
            if 200 <= status < 300:
                raise ProtocolError(f"sandboxd answered the attach with {status} {reason}, not 101: is it older than attach?")
            raise failure(status, reason, raw, headers.get("x-request-id"), headers.get("retry-after"))
        if headers.get("upgrade", "").lower() != UPGRADE:
            raise ProtocolError(f"sandboxd upgraded the attach to {headers.get('upgrade')!r}, not {UPGRADE}")
        # The command has no timeout: a read waits as long as it is silent.
        sock.settimeout(None)
        return Attached(sock, r, t.socket, headers.get("x-request-id"))
    except BaseException:
        sock.close()
        raise


class AttachCalls(Caller):
    """The attach endpoint; mixed into Client."""

    def attach(
        self,
        id: str,
        argv: Sequence[str],
        *,
        tty: bool = False,
        rows: int | None = None,
        cols: int | None = None,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        request_timeout: float | None = None,
    ) -> Attached:
        """POST /v1/sessions/{id}/attach: runs argv (no shell) in the
        session's sandbox beside its interpreter, as the sandbox's user,
        with its standard streams on a connection of its own (exec -i;
        ``tty`` gives it a terminal of ``rows`` x ``cols``, default 24 x
        80, whose output is all stdout). It has no timeout; the session
        counts as in use while it runs. A refusal (a session not running,
        a command that cannot start) raises as any call;
        ``request_timeout`` bounds the handshake alone."""
        body = attach_request(argv, tty=tty, rows=rows, cols=cols, env=env, cwd=cwd)
        return attach(self._t, api_path("v1", "sessions", id, "attach"), body, self._timeout(request_timeout))
