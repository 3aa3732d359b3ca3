"""Execution calls of the API: exec, interrupt, packages, one-shot run, history.

Each answers one Execution. With an output callback the call asks for the
NDJSON stream (Accept: application/x-ndjson) and feeds each stdout and
stderr chunk to the callback as the code produces it, and each output the
code displays (display()) to on_display as it does; the last line is the
Execution, the same as the one a plain call answers. A streaming call
that is abandoned (its connection closed before the end) interrupts its
execution on the daemon; a plain one leaves it to finish.
"""

from __future__ import annotations

import base64
import math
from typing import Any, Callable, Mapping

from ._api_sessions import session_request
from ._transport import STREAM_MIME, Caller, api_path
from .errors import ProtocolError, error_from_answer
from .models import Execution, Output

OnOutput = Callable[[str], object]
"""Called with each chunk of output as it comes: not necessarily whole lines."""

OnDisplay = Callable[[Output], object]
"""Called with each output the code displays, as it does (the Execution's
outputs hold it too, in order)."""

EXEC_GRACE_S = 60.0
"""How long past an execution's own timeout a call waits for its answer:
the interrupt grace, a kill and a fresh interpreter fit well inside it."""


def exec_request_timeout(request_timeout: float | None, timeout_s: float | None) -> float | None:
    """The HTTP timeout of an execution: the caller's, else its execution
    timeout and a grace, else none (the daemon bounds every execution)."""
    if request_timeout is not None:
        return request_timeout
    if timeout_s:
        return float(timeout_s) + EXEC_GRACE_S
    return None


def exec_request(code: str, language: str, timeout: float | None, env: Mapping[str, str] | None, cwd: str | None) -> dict[str, Any]:
    """The body of POST …/exec (api.ExecRequest); None fields stay absent."""
    body: dict[str, Any] = {"language": language, "code": code}
    if timeout is not None:
        body["timeout_s"] = timeout
    if env:
        body["env"] = {str(k): str(v) for k, v in env.items()}
    if cwd:
        body["cwd"] = cwd
    return body


class ExecCalls(Caller):
    """The execution endpoints; mixed into Client."""

    def exec(
        self,
        id: str,
        code: str,
        *,
        language: str = "python",
        timeout: float | None = None,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        on_stdout: OnOutput | None = None,
        on_stderr: OnOutput | None = None,
        request_timeout: float | None = None,
        on_display: OnDisplay | None = None,
    ) -> Execution:
        """POST /v1/sessions/{id}/exec: runs code ("python" or "shell") in
        the session. ``timeout`` is the execution's own (seconds; absent:
        the session's timeout_s); an execution that times out or fails is
        an Execution whose status says so, not an exception."""
        return self._execution(
            api_path("v1", "sessions", id, "exec"),
            exec_request(code, language, timeout, env, cwd),
            on_stdout,
            on_stderr,
            exec_request_timeout(request_timeout, timeout),
            on_display,
        )

    def interrupt(self, id: str, *, request_timeout: float | None = None) -> bool:
        """POST /v1/sessions/{id}/interrupt: interrupts the execution running
        in the session, as Ctrl-C would (Python raises KeyboardInterrupt; a
        shell command gets SIGINT, then SIGKILL after a grace). That
        execution answers status "interrupted"; the session stays. False
        when nothing was running."""
        with self._t.send("POST", api_path("v1", "sessions", id, "interrupt"), timeout=self._timeout(request_timeout)) as a:
            return (a.json() or {}).get("interrupted") is True

    def install_packages(
        self,
        id: str,
        packages: list[str],
        *,
        index_url: str | None = None,
        on_stdout: OnOutput | None = None,
        on_stderr: OnOutput | None = None,
        request_timeout: float | None = None,
    ) -> Execution:
        """POST /v1/sessions/{id}/packages: pip install --user into the
        session's /workspace. A failed install is an Execution with pip's
        exit code; a bad requirement (an option, a URL) is InvalidArgument."""
        body: dict[str, Any] = {"packages": list(packages)}
        if index_url:
            body["index_url"] = index_url
        return self._execution(api_path("v1", "sessions", id, "packages"), body, on_stdout, on_stderr, request_timeout)

    def run(
        self,
        code: str,
        *,
        language: str = "python",
        timeout: float | None = None,
        files: Mapping[str, bytes | str] | None = None,
        on_stdout: OnOutput | None = None,
        on_stderr: OnOutput | None = None,
        request_timeout: float | None = None,
        on_display: OnDisplay | None = None,
        **fields: Any,
    ) -> Execution:
        """POST /v1/run: code run once in a fresh sandbox, gone afterwards.
        ``files`` are written first (path: content); ``fields`` are those
        of a create (template, memory_mb, env, ...). ``timeout`` is whole
        seconds on this endpoint: a fraction is rounded up."""
        if timeout is not None:
            fields["timeout_s"] = math.ceil(timeout)
        body = session_request(fields)
        body["language"] = language
        body["code"] = code
        if files:
            body["files"] = [
                {"path": p, "content_base64": base64.b64encode(c.encode() if isinstance(c, str) else bytes(c)).decode()}
                for p, c in files.items()
            ]
        return self._execution(
            "/v1/run", body, on_stdout, on_stderr, exec_request_timeout(request_timeout, body.get("timeout_s")), on_display
        )

    def executions(self, id: str, *, limit: int = 0, request_timeout: float | None = None) -> list[Execution]:
        """GET /v1/sessions/{id}/executions: past executions, newest first,
        as summaries (no output); limit 0 for all that are kept."""
        q = [("limit", str(limit))] if limit > 0 else []
        with self._t.send("GET", api_path("v1", "sessions", id, "executions"), query=q, timeout=self._timeout(request_timeout)) as a:
            return [Execution.from_json(e) for e in (a.json() or {}).get("executions") or []]

    def _execution(
        self,
        path: str,
        body: dict[str, Any],
        on_stdout: OnOutput | None,
        on_stderr: OnOutput | None,
        timeout: float | None,
        on_display: OnDisplay | None = None,
    ) -> Execution:
        if on_stdout is None and on_stderr is None and on_display is None:
            with self._t.send("POST", path, json_body=body, timeout=timeout) as a:
                return Execution.from_json(a.json())
        with self._t.send("POST", path, json_body=body, accept=STREAM_MIME, timeout=timeout) as a:
            if a.content_type != STREAM_MIME:
                # A daemon that does not stream answers the Execution whole.
                return Execution.from_json(a.json())
            for ev in a.lines():
                kind = ev.get("type")
                if kind == "stdout":
                    if on_stdout is not None:
                        on_stdout(str(ev.get("data") or ""))
                elif kind == "stderr":
                    if on_stderr is not None:
                        on_stderr(str(ev.get("data") or ""))
                elif kind == "display":
                    o = ev.get("output")
                    if on_display is not None and isinstance(o, dict):
                        on_display(Output.from_json(o))
                elif kind == "done":
                    e = ev.get("execution")
                    if not isinstance(e, dict):
                        raise ProtocolError("sandboxd ended the stream without an execution", request_id=a.request_id)
                    return Execution.from_json(e)
                elif kind == "error":
                    # The stream's status said 200; the line's code says the class.
                    d = ev.get("error")
                    if not isinstance(d, dict):
                        d = {}
                    raise error_from_answer(
                        None,
                        str(d.get("code") or "internal"),
                        str(d.get("message") or "sandboxd ended the stream with an error"),
                        request_id=a.request_id,
                    )
                # Other types are a newer daemon's: skipped, as the contract lets.
            raise ProtocolError("sandboxd closed the stream before the execution ended", request_id=a.request_id)
