"""Background process calls of the API: start, list, signal, logs (exec --detach).

A background process runs as is (argv, no shell) as the sandbox's user,
with no timeout, until it exits, is signalled or the session stops. Its
stdout and stderr go to a log in the sandbox's /tmp that the daemon serves
from an offset, with whether the process still runs in a header: a
follower asks again from where it got to until it no longer runs.
"""

from __future__ import annotations

import time
from typing import Any, Generator, Mapping, Sequence

from ._api_attached import term_size
from ._transport import Caller, api_path
from .errors import ProtocolError, RequestTimeout
from .models import Process, ProcessLogs

HEADER_RUNNING = "Sandboxd-Process-Running"
"""Whether the process of a logs answer still runs: "true" or "false"."""

HEADER_EXIT_CODE = "Sandboxd-Process-Exit-Code"
"""How the process of a logs answer ended, once the daemon saw it."""

DEFAULT_FOLLOW_INTERVAL = 0.2
"""How often a follower asks for more output when the last ask had none,
in seconds: each ask is one GET."""


def command_request(argv: Sequence[str], env: Mapping[str, str] | None, cwd: str | None) -> dict[str, Any]:
    """The body of POST …/processes and …/attach (api.ProcessRequest,
    api.AttachRequest): argv as is, None fields absent."""
    if isinstance(argv, (str, bytes)):
        # A string would go as one word per character, or fail: the
        # daemon runs argv without a shell.
        raise TypeError("argv is a list of strings, the command and its arguments (no shell): e.g. ['ls', '-la']")
    body: dict[str, Any] = {"argv": [str(a) for a in argv]}
    if env:
        body["env"] = {str(k): str(v) for k, v in env.items()}
    if cwd:
        body["cwd"] = cwd
    return body


class ProcessCalls(Caller):
    """The background process endpoints; mixed into Client."""

    def start_process(
        self,
        id: str,
        argv: Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        stdin: bool = False,
        tty: tuple[int, int] | None = None,
        tag: str | None = None,
        timeout_s: float | None = None,
        request_timeout: float | None = None,
    ) -> Process:
        """POST /v1/sessions/{id}/processes: starts argv in the background
        (no shell) and answers it, ``pid`` first: its output is
        process_logs(id, pid).

        With ``stdin`` (its input kept open for write_stdin) or ``tty``
        ((rows, cols): it runs on a terminal of that size) it is attached:
        the daemon holds its streams, and its output is
        process_output(id, pid) instead. ``tag`` names it (Process.tag in
        processes()); ``timeout_s`` kills it that many seconds after its
        start (None: never)."""
        body = command_request(argv, env, cwd)
        if stdin:
            body["stdin"] = True
        if tty is not None:
            if not isinstance(tty, (tuple, list)) or len(tty) != 2:
                raise TypeError(f"tty is (rows, cols), e.g. (24, 80), not {tty!r}")
            body["tty"] = term_size(*tty)
        if tag:
            body["tag"] = str(tag)
        if timeout_s is not None:
            if isinstance(timeout_s, bool) or not isinstance(timeout_s, (int, float)) or not timeout_s > 0:
                raise ValueError(f"timeout_s must be a number of seconds above 0, not {timeout_s!r}")
            body["timeout_s"] = timeout_s
        with self._t.send(
            "POST",
            api_path("v1", "sessions", id, "processes"),
            json_body=body,
            timeout=self._timeout(request_timeout),
        ) as a:
            out = a.json()
            return Process.from_json(out if isinstance(out, dict) else {})

    def processes(self, id: str, *, request_timeout: float | None = None) -> list[Process]:
        """GET /v1/sessions/{id}/processes: every process of the session's
        sandbox (pid 1 is its agent), with its CPU time and memory."""
        with self._t.send("GET", api_path("v1", "sessions", id, "processes"), timeout=self._timeout(request_timeout)) as a:
            out = a.json()
            items = out.get("processes") if isinstance(out, dict) else None
            return [Process.from_json(p) for p in items or [] if isinstance(p, dict)]

    def signal_process(self, id: str, pid: int, signal: str | int | None = "TERM", *, request_timeout: float | None = None) -> None:
        """DELETE /v1/sessions/{id}/processes/{pid}: sends ``signal`` ("TERM",
        "KILL", "INT", "HUP", a number; None: the daemon's default, TERM).
        NotFound when there is no such process; pid 1 is InvalidArgument."""
        q = [] if signal is None or signal == "" else [("signal", str(signal))]
        with self._t.send(
            "DELETE", api_path("v1", "sessions", id, "processes", str(int(pid))), query=q, timeout=self._timeout(request_timeout)
        ) as a:
            a.read()

    def process_logs(self, id: str, pid: int, *, offset: int = 0, request_timeout: float | None = None) -> ProcessLogs:
        """GET /v1/sessions/{id}/processes/{pid}/logs: a background
        process's output from byte ``offset``, whether it still runs and
        how it ended. NotFound for a process not started in the
        background."""
        q = [("offset", str(int(offset)))] if offset > 0 else []
        with self._t.send(
            "GET", api_path("v1", "sessions", id, "processes", str(int(pid)), "logs"), query=q, timeout=self._timeout(request_timeout)
        ) as a:
            data = a.read()
            running = (a.resp.getheader(HEADER_RUNNING) or "").strip().lower()
            if running not in ("true", "false"):
                # A follower that took a missing header for "ended" would
                # stop early, for "running" never: neither is safe.
                raise ProtocolError(f"sandboxd answered the logs of process {pid} without {HEADER_RUNNING}", request_id=a.request_id)
            code: int | None = None
            raw_code = (a.resp.getheader(HEADER_EXIT_CODE) or "").strip()
            if raw_code:
                try:
                    code = int(raw_code)
                except ValueError:
                    code = None
            return ProcessLogs(data=data, running=running == "true", exit_code=code, offset=max(0, int(offset)))

    def follow_process(
        self,
        id: str,
        pid: int,
        *,
        offset: int = 0,
        poll_interval: float = DEFAULT_FOLLOW_INTERVAL,
        timeout: float | None = None,
        request_timeout: float | None = None,
    ) -> Generator[bytes, None, int | None]:
        """A background process's output from ``offset`` as it comes, chunk
        by chunk (not whole lines), until the process no longer runs; the
        generator's value (``yield from``) is its exit code, when known.
        It asks again at once after an answer with output, else after
        ``poll_interval`` seconds. ``timeout`` bounds the whole: past it,
        RequestTimeout, and the process runs on."""
        if not poll_interval > 0:
            raise ValueError(f"poll_interval must be above 0, not {poll_interval!r}")
        deadline = None if timeout is None else time.monotonic() + timeout
        at = max(0, int(offset))
        while True:
            got = self.process_logs(id, pid, offset=at, request_timeout=request_timeout)
            if got.data:
                yield got.data
                at = got.next_offset
            # The daemon tells "running" before it sends the output, so an
            # answer that says ended holds everything the process wrote.
            if not got.running:
                return got.exit_code
            pause = 0.0 if got.data else poll_interval
            if deadline is not None:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise RequestTimeout(f"process {pid} of session {id} was still running after {timeout:g} s: follow it again from offset {at}, or kill it")
                pause = min(pause, left)
            if pause > 0:
                time.sleep(pause)
