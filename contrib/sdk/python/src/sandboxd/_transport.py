"""HTTP/1.1 over sandboxd's Unix socket, with the contract's errors.

The standard library's http.client speaks HTTP over whatever socket its
connection's connect() opens, so a Unix socket needs one override and no
dependency. Every call opens its own connection: a connect on a Unix socket
costs microseconds, and a connection that is never shared can neither be
found closed by the daemon's idle timeout halfway through a call nor be
used by two threads at once (AsyncSandbox runs calls in threads).
"""

from __future__ import annotations

import email.utils
import http.client
import io
import json
import os
import socket
import time
import urllib.parse
from typing import IO, Any, Collection, Iterable, Iterator, Mapping, Sequence, Union

from .errors import ProtocolError, RequestTimeout, SandboxdError, Unavailable, error_from_answer

DEFAULT_SOCKET = "/run/sandboxd/sandboxd.sock"
"""Where the daemon listens unless told otherwise."""

SOCKET_ENV = "SANDBOXD_SOCKET"
"""The environment variable that overrides DEFAULT_SOCKET."""

STREAM_MIME = "application/x-ndjson"
"""The Accept value that asks for an execution streamed as it runs."""

VERSION = "0.1.0"

# An error body is one sentence; a longer one is not worth holding.
_MAX_ERROR_BODY = 1 << 20

# An iterable of bytes (a generator) goes chunked, as a file object does.
Body = Union[bytes, bytearray, memoryview, str, IO[bytes], Iterable[bytes], None]
Query = Sequence[tuple[str, str]]


def socket_path(path: str | None) -> str:
    """The socket to use: the given one, else $SANDBOXD_SOCKET, else the default."""
    return path or os.environ.get(SOCKET_ENV) or DEFAULT_SOCKET


class UnixHTTPConnection(http.client.HTTPConnection):
    """An HTTPConnection whose socket is the daemon's Unix socket."""

    def __init__(self, path: str, timeout: float | None) -> None:
        # The host name only fills the Host header; the daemon ignores it.
        super().__init__("sandboxd", timeout=timeout)
        self.path = path

    def connect(self) -> None:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            s.settimeout(self.timeout)
            s.connect(self.path)
        except BaseException:
            s.close()
            raise
        self.sock = s


class Answer:
    """A 2xx answer whose body is still to be read; close() ends the call."""

    def __init__(self, conn: http.client.HTTPConnection, resp: http.client.HTTPResponse, where: str, timeout: float | None) -> None:
        self._conn = conn
        self.resp = resp
        self._where = where
        self._timeout = timeout

    @property
    def status(self) -> int:
        return self.resp.status

    @property
    def content_type(self) -> str:
        return (self.resp.getheader("Content-Type") or "").split(";")[0].strip().lower()

    @property
    def request_id(self) -> str | None:
        return self.resp.getheader("X-Request-Id")

    def read(self) -> bytes:
        with _mapped(self._where, self._timeout):
            return self.resp.read()

    def json(self) -> Any:
        b = self.read()
        if not b:
            return None
        try:
            return json.loads(b)
        except ValueError as e:
            raise ProtocolError(f"bad answer from sandboxd: {e}", status=self.status, request_id=self.request_id) from None

    def lines(self) -> Iterator[dict[str, Any]]:
        """The JSON objects of an NDJSON body, one a line, as they come."""
        while True:
            with _mapped(self._where, self._timeout):
                line = self.resp.readline()
            if not line:
                return
            line = line.strip()
            if not line:
                continue
            try:
                obj = json.loads(line)
            except ValueError as e:
                raise ProtocolError(f"bad stream line from sandboxd: {e}", request_id=self.request_id) from None
            if isinstance(obj, dict):
                yield obj

    def stream(self) -> IO[bytes]:
        """The body as a binary file object read as it comes; closing it
        ends the call."""
        return io.BufferedReader(_BodyStream(self), 1 << 16)

    def close(self) -> None:
        self.resp.close()
        self._conn.close()

    def __enter__(self) -> Answer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class _BodyStream(io.RawIOBase):
    """An answer's body as a raw stream, its failures the SDK's errors."""

    def __init__(self, ans: Answer) -> None:
        super().__init__()
        self._ans = ans

    def readable(self) -> bool:
        return True

    def readinto(self, b: Any) -> int:
        with _mapped(self._ans._where, self._ans._timeout):
            return self._ans.resp.readinto(b)

    def close(self) -> None:
        if not self.closed:
            self._ans.close()
        super().close()


class _mapped:
    """Turns socket and HTTP failures into the SDK's errors, in one place."""

    def __init__(self, where: str, timeout: float | None) -> None:
        self.where = where
        self.timeout = timeout

    def __enter__(self) -> None:
        return None

    def __exit__(self, typ: type[BaseException] | None, exc: BaseException | None, tb: object) -> None:
        # It never swallows: what it does not map goes on as it is.
        if exc is None or isinstance(exc, SandboxdError) or not isinstance(exc, Exception):
            return
        if isinstance(exc, (socket.timeout, TimeoutError)):
            waited = f"for {self.timeout:g} s" if self.timeout is not None else "in time"
            raise RequestTimeout(
                f"sandboxd at {self.where} sent nothing {waited}: give the call a longer request_timeout, or check the daemon's log"
            ) from exc
        if isinstance(exc, ConnectionError):
            raise Unavailable(f"talking to sandboxd at {self.where}: {exc}") from exc
        if isinstance(exc, (http.client.HTTPException, OSError)):
            raise ProtocolError(f"talking to sandboxd at {self.where}: {exc!r}") from exc


class Transport:
    """Sends calls to one daemon and hands back 2xx answers; anything else
    is raised as the exception of its error code. Paths come escaped
    (see api_path)."""

    def __init__(self, socket: str | None = None) -> None:
        self.socket = socket_path(socket)

    def send(
        self,
        method: str,
        path: str,
        *,
        query: Query = (),
        json_body: Any = None,
        body: Body = None,
        accept: str | None = None,
        headers: Mapping[str, str] | None = None,
        timeout: float | None,
        answers: Collection[int] = (),
    ) -> Answer:
        url = path
        if query:
            url += "?" + urllib.parse.urlencode(list(query))
        hdrs = {"User-Agent": f"sandboxd-python/{VERSION}", "Connection": "close"}
        if headers:
            hdrs.update(headers)
        data: Body = body
        if json_body is not None:
            data = json.dumps(json_body).encode()
            hdrs["Content-Type"] = "application/json"
        elif body is not None:
            hdrs.setdefault("Content-Type", "application/octet-stream")
            if isinstance(body, str):
                data = body.encode()
        if accept:
            hdrs["Accept"] = accept
        conn = UnixHTTPConnection(self.socket, timeout)
        try:
            self._connect(conn)
            resp = self._exchange(conn, method, url, data, hdrs, timeout)
        except BaseException:
            conn.close()
            raise
        ans = Answer(conn, resp, self.socket, timeout)
        # ``answers`` are statuses the caller reads as answers of its own
        # (the Health a 503 of GET /v1/health carries).
        if 200 <= resp.status < 300 or resp.status in answers:
            return ans
        try:
            raise self._failure(ans)
        finally:
            ans.close()

    def connect(self, timeout: float | None) -> socket.socket:
        """A connected socket of the daemon's for a call that speaks HTTP
        itself (attach, which takes the connection over), with the same
        errors as every other call's connect."""
        conn = UnixHTTPConnection(self.socket, timeout)
        self._connect(conn)
        s = conn.sock
        conn.sock = None  # now the caller's: the connection must not close it
        assert s is not None
        return s

    def _connect(self, conn: UnixHTTPConnection) -> None:
        try:
            conn.connect()
        except PermissionError:
            raise Unavailable(f"permission denied on {self.socket}: run as root or as a member of the sandboxd group") from None
        except (FileNotFoundError, ConnectionRefusedError):
            raise Unavailable(f"cannot connect to sandboxd at {self.socket}: is it running?") from None
        except (socket.timeout, TimeoutError):
            raise RequestTimeout(f"cannot connect to sandboxd at {self.socket}: it did not accept within {conn.timeout:g} s") from None
        except OSError as e:
            raise Unavailable(f"cannot connect to sandboxd at {self.socket}: is it running? ({e})") from None

    def _exchange(self, conn: UnixHTTPConnection, method: str, url: str, data: Body, headers: dict[str, str], timeout: float | None) -> http.client.HTTPResponse:
        with _mapped(self.socket, timeout):
            try:
                conn.request(method, url, body=data, headers=headers)
            except (BrokenPipeError, ConnectionResetError) as e:
                # The daemon may answer before it has read the whole body (a
                # 413 for an upload over its limit) and close: its answer
                # says more than the broken pipe does.
                try:
                    return conn.getresponse()
                except Exception:
                    raise e from None
            return conn.getresponse()

    @staticmethod
    def _failure(ans: Answer) -> SandboxdError:
        with _mapped(ans._where, ans._timeout):
            raw = ans.resp.read(_MAX_ERROR_BODY)
        return failure(ans.status, ans.resp.reason, raw, ans.request_id, ans.resp.getheader("Retry-After"))


def failure(status: int, reason: str, raw: bytes, request_id: str | None, retry_after_header: str | None) -> SandboxdError:
    """The exception of a failed answer from its body, ``{"error": {"code",
    "message"}}``; a body that is not that is the message as it is."""
    code, message = "", ""
    try:
        detail = json.loads(raw).get("error")
        if isinstance(detail, dict):
            code, message = str(detail.get("code") or ""), str(detail.get("message") or "")
    except (ValueError, AttributeError):
        message = raw.decode("utf-8", "replace").strip()
    if not message:
        message = raw.decode("utf-8", "replace").strip() or f"sandboxd answered HTTP {status} {reason}".strip()
    return error_from_answer(status, code, message, request_id=request_id, retry_after=retry_after(retry_after_header))


def api_path(*segments: str) -> str:
    """A path of the API from its segments, each escaped: a session id is
    the caller's input and must not add a segment of its own."""
    return "/" + "/".join(urllib.parse.quote(s, safe="") for s in segments)


def retry_after(v: str | None) -> float | None:
    """Seconds of a Retry-After header, in both of its forms (seconds, or an HTTP date)."""
    if not v:
        return None
    v = v.strip()
    if v.isdigit():
        return float(v)
    try:
        when = email.utils.parsedate_to_datetime(v)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


class Caller:
    """What every group of API calls needs: the transport, and the timeout
    of a call that names none."""

    _t: Transport
    request_timeout: float | None

    def _timeout(self, request_timeout: float | None) -> float | None:
        return self.request_timeout if request_timeout is None else request_timeout
