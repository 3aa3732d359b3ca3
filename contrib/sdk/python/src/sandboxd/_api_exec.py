"""Execution calls of the API: exec, interrupt, packages, one-shot run, history.

Each answers one Execution, but start_exec (the id of an execution it
leaves running: wait false) and executions (summaries). With an output
callback the call asks for the NDJSON stream (Accept:
application/x-ndjson) and feeds each stdout and stderr chunk to the
callback as the code produces it, and each output the code displays
(display()) to on_display as it does; the last line is the
Execution, the same as the one a plain call answers. A streaming call
that is abandoned (its connection closed before the end) interrupts its
execution on the daemon; a plain one leaves it to finish.
"""

from __future__ import annotations

import base64
import math
import time
from typing import Any, Callable, Mapping

from ._api_sessions import session_request
from ._transport import STREAM_MIME, Caller, api_path
from .errors import ProtocolError, RequestTimeout, error_from_answer
from .models import STATUS_RUNNING, Execution, ExecutionSummary, Output

OnOutput = Callable[[str], object]
"""Called with each chunk of output as it comes: not necessarily whole lines."""

OnDisplay = Callable[[Output], object]
"""Called with each output the code displays, as it does (the Execution's
outputs hold it too, in order)."""

DEFAULT_POLL_INTERVAL = 0.2
"""How often wait_execution asks how an execution goes, in seconds: each
ask is one GET of a few hundred bytes."""

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


def exec_request(
    code: str, language: str, timeout: float | None, env: Mapping[str, str] | None, cwd: str | None, context: str | None = None
) -> dict[str, Any]:
    """The body of POST …/exec (api.ExecRequest); None fields stay absent."""
    body: dict[str, Any] = {"language": language, "code": code}
    if timeout is not None:
        body["timeout_s"] = timeout
    if env:
        body["env"] = {str(k): str(v) for k, v in env.items()}
    if cwd:
        body["cwd"] = cwd
    if context:
        body["context"] = context
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
        context: str | None = None,
    ) -> Execution:
        """POST /v1/sessions/{id}/exec: runs code ("python" or "shell") in
        the session. ``timeout`` is the execution's own (seconds; absent:
        the session's timeout_s); an execution that times out or fails is
        an Execution whose status says so, not an exception. ``context``
        runs it in that code context (create_context; NotFound for one the
        session has not), else in "default"."""
        return self._execution(
            api_path("v1", "sessions", id, "exec"),
            exec_request(code, language, timeout, env, cwd, context),
            on_stdout,
            on_stderr,
            exec_request_timeout(request_timeout, timeout),
            on_display,
        )

    def start_exec(
        self,
        id: str,
        code: str,
        *,
        language: str = "python",
        timeout: float | None = None,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        request_timeout: float | None = None,
        context: str | None = None,
    ) -> str:
        """POST /v1/sessions/{id}/exec with wait false: starts code in the
        session and answers the execution's id at once (202), while the
        code runs on (its ``timeout`` still holds; an execution already
        running in the session goes first). execution(id, eid) tells how it
        goes, wait_execution waits for its end; the session's history keeps
        it as any other."""
        body = exec_request(code, language, timeout, env, cwd, context)
        body["wait"] = False
        with self._t.send("POST", api_path("v1", "sessions", id, "exec"), json_body=body, timeout=self._timeout(request_timeout)) as a:
            out = a.json()
        eid = out.get("id") if isinstance(out, dict) else None
        if not isinstance(eid, str) or not eid:
            raise ProtocolError("sandboxd answered an exec with wait false without the execution's id", status=a.status, request_id=a.request_id)
        return eid

    def execution(self, id: str, eid: str, *, request_timeout: float | None = None) -> Execution:
        """GET /v1/sessions/{id}/executions/{eid}: status "running" with the
        output so far while it runs, then the whole Execution while the
        session's history keeps it (NotFound after, as for an id it never
        had)."""
        with self._t.send("GET", api_path("v1", "sessions", id, "executions", eid), timeout=self._timeout(request_timeout)) as a:
            return Execution.from_json(a.json())

    def wait_execution(
        self,
        id: str,
        eid: str,
        *,
        timeout: float | None = None,
        poll_interval: float = DEFAULT_POLL_INTERVAL,
        request_timeout: float | None = None,
    ) -> Execution:
        """Asks for execution eid every ``poll_interval`` seconds until it
        no longer runs, and answers it then. ``timeout`` bounds the wait
        (None: as long as the execution runs, which its own timeout bounds):
        past it, RequestTimeout, and the execution runs on."""
        if not poll_interval > 0:
            raise ValueError(f"poll_interval must be above 0, not {poll_interval!r}")
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            e = self.execution(id, eid, request_timeout=request_timeout)
            if e.status != STATUS_RUNNING:
                return e
            pause = poll_interval
            if deadline is not None:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise RequestTimeout(f"execution {eid} of session {id} was still running after {timeout:g} s: wait again, or interrupt it")
                pause = min(pause, left)
            time.sleep(pause)

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

    def executions(self, id: str, *, limit: int = 0, request_timeout: float | None = None) -> list[ExecutionSummary]:
        """GET /v1/sessions/{id}/executions: the session's executions,
        newest first, those running first, as summaries (no output: get
        one whole with execution(id, eid)); limit 0 for all that are kept."""
        q = [("limit", str(limit))] if limit > 0 else []
        with self._t.send("GET", api_path("v1", "sessions", id, "executions"), query=q, timeout=self._timeout(request_timeout)) as a:
            return [ExecutionSummary.from_json(e) for e in (a.json() or {}).get("executions") or [] if isinstance(e, dict)]

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
