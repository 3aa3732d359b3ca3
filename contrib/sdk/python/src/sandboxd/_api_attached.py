"""Attached process calls of the API: input, terminal size, signals, output.

A process started with ``stdin=True`` or a ``tty`` (start_process) is
attached: the daemon holds its streams instead of writing them to a log.
Its input is written with POST …/processes/{pid}/stdin (raw bytes, ?eof=1
closes it), its terminal resized with …/resize, and its output read as
NDJSON lines from …/output: pieces numbered by byte from its start, the
last line its exit code.
"""

from __future__ import annotations

from typing import Generator

from ._transport import STREAM_MIME, Caller, api_path
from .errors import ProtocolError, error_from_answer
from .models import ProcessChunk

FROM_START = "start"
"""output(from_=...): everything the daemon still keeps of the process's output."""

FROM_NOW = "now"
"""output(from_=...): only what the process writes after the call."""


def from_query(from_: str | int) -> str:
    """The ?from= of an output read: "start", "now" or a byte offset."""
    if isinstance(from_, bool):
        raise TypeError("from_ is 'start', 'now' or a byte offset")
    if isinstance(from_, int):
        if from_ < 0:
            raise ValueError(f"from_ must be a byte offset of 0 or more, not {from_}")
        return str(from_)
    if from_ in (FROM_START, FROM_NOW):
        return from_
    raise ValueError(f"from_ is 'start', 'now' or a byte offset, not {from_!r}")


def term_size(rows: int, cols: int) -> dict[str, int]:
    """A terminal's size on the wire (api.TermSize), checked here: the daemon
    takes 16-bit sizes and a 0 means no terminal at all."""
    for name, v in (("rows", rows), ("cols", cols)):
        if isinstance(v, bool) or not isinstance(v, int) or not 0 < v < 1 << 16:
            raise ValueError(f"{name} must be a whole number from 1 to 65535, not {v!r}")
    return {"rows": rows, "cols": cols}


class AttachedProcessCalls(Caller):
    """The attached process endpoints; mixed into Client."""

    def write_stdin(self, id: str, pid: int, data: bytes | str, *, eof: bool = False, request_timeout: float | None = None) -> None:
        """POST /v1/sessions/{id}/processes/{pid}/stdin: sends ``data`` (a str
        as UTF-8) to an attached process's input, its terminal's with a tty;
        ``eof`` closes the input after it. Conflict once the process ended
        or its input is closed; NotFound for a process not attached."""
        if isinstance(data, str):
            data = data.encode()
        q = [("eof", "1")] if eof else []
        with self._t.send(
            "POST",
            api_path("v1", "sessions", id, "processes", str(int(pid)), "stdin"),
            query=q,
            body=bytes(data),
            timeout=self._timeout(request_timeout),
        ) as a:
            a.read()

    def close_stdin(self, id: str, pid: int, *, request_timeout: float | None = None) -> None:
        """Closes an attached process's input (end of file), as
        write_stdin(id, pid, b"", eof=True)."""
        self.write_stdin(id, pid, b"", eof=True, request_timeout=request_timeout)

    def resize_process(self, id: str, pid: int, rows: int, cols: int, *, request_timeout: float | None = None) -> None:
        """POST /v1/sessions/{id}/processes/{pid}/resize: sets the size of an
        attached process's terminal. Conflict for one without a terminal."""
        with self._t.send(
            "POST",
            api_path("v1", "sessions", id, "processes", str(int(pid)), "resize"),
            json_body=term_size(rows, cols),
            timeout=self._timeout(request_timeout),
        ) as a:
            a.read()

    def send_signal(self, id: str, pid: int, signal: str | int = "TERM", *, request_timeout: float | None = None) -> None:
        """POST /v1/sessions/{id}/processes/{pid}/signal: sends ``signal``
        ("TERM", "KILL", "INT", "HUP", a number) to process pid, as
        signal_process does with DELETE. NotFound when there is no such
        process; pid 1 and unknown signals are InvalidArgument."""
        with self._t.send(
            "POST",
            api_path("v1", "sessions", id, "processes", str(int(pid)), "signal"),
            json_body={"signal": str(signal)},
            timeout=self._timeout(request_timeout),
        ) as a:
            a.read()

    def process_output(
        self,
        id: str,
        pid: int,
        *,
        from_: str | int = FROM_START,
        follow: bool = True,
        request_timeout: float | None = None,
    ) -> Generator[ProcessChunk, None, int | None]:
        """GET /v1/sessions/{id}/processes/{pid}/output: an attached
        process's output from ``from_`` ("start": what the daemon still
        keeps, its last MiB; "now"; or a byte offset), chunk by chunk as
        it comes. With ``follow`` it goes on until the process ends, the
        last chunk its end (``exit_code`` set, no data); without, it
        answers what there is and stops. The generator's value (``yield
        from``) is the exit code, None when it did not end.

        A followed process may be silent for as long as it runs, so
        without ``request_timeout`` a follow waits for it however long it
        takes (closing the generator hangs up; the process runs on)."""
        q = [("from", from_query(from_))]
        if follow:
            q.append(("follow", "1"))
        timeout = request_timeout if request_timeout is not None else (None if follow else self._timeout(None))
        with self._t.send(
            "GET",
            api_path("v1", "sessions", id, "processes", str(int(pid)), "output"),
            query=q,
            accept=STREAM_MIME,
            timeout=timeout,
        ) as a:
            for line in a.lines():
                if line.get("type") == "error":
                    # The stream's status said 200; the line's code says the class.
                    d = line.get("error") if isinstance(line.get("error"), dict) else {}
                    raise error_from_answer(
                        None,
                        str(d.get("code") or "internal"),
                        str(d.get("message") or "sandboxd ended the output stream with an error"),
                        request_id=a.request_id,
                    )
                try:
                    chunk = ProcessChunk.from_json(line)
                except ValueError as e:
                    raise ProtocolError(f"bad output line from sandboxd: {e}", request_id=a.request_id) from None
                yield chunk
                if chunk.ended:
                    return chunk.exit_code
        return None
