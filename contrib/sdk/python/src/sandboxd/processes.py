"""sbx.processes: commands that run in the background of a sandbox (exec --detach).

    p = sbx.processes.start(["python3", "-m", "http.server", "8000"])
    sbx.processes.list()                    # [Process(pid=1, ...), Process(pid=p.pid, detached=True), ...]
    for chunk in sbx.processes.follow(p.pid):   # its output as it comes, until it ends
        print(chunk.decode(), end="")
    sbx.processes.kill(p.pid)

With ``stdin=True`` or a ``tty`` a process is attached: the daemon holds its
streams, it takes input, and its output comes apart by stream:

    p = sbx.processes.start(["python3", "-i"], stdin=True, tag="repl")
    sbx.processes.write_stdin(p.pid, "print(6 * 7)\n")
    sbx.processes.close_stdin(p.pid)
    for c in sbx.processes.output(p.pid):       # ProcessChunk(stream, data, ...), the last its exit code
        print(c.stream, c.text, c.exit_code)
"""

from __future__ import annotations

import builtins
from typing import TYPE_CHECKING, Generator, Mapping, Sequence

from ._api_processes import DEFAULT_FOLLOW_INTERVAL
from .errors import NotFound
from .models import Process, ProcessChunk, ProcessLogs

if TYPE_CHECKING:
    from .sandbox import Sandbox


def shell_argv(cmd: str | Sequence[str]) -> list[str]:
    """argv as the daemon runs it: a string is a command line for /bin/sh
    (as commands.run takes), a list runs as it is."""
    if isinstance(cmd, str):
        return ["/bin/sh", "-c", cmd]
    return [str(a) for a in cmd]


class Processes:
    """The background processes of its sandbox's session."""

    def __init__(self, sandbox: Sandbox) -> None:
        self._sbx = sandbox

    def start(
        self,
        cmd: str | Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        stdin: bool = False,
        tty: tuple[int, int] | None = None,
        tag: str | None = None,
        timeout_s: float | None = None,
    ) -> Process:
        """Starts a command in the background: a list runs as it is, a
        string with /bin/sh. It runs as the sandbox's user until it exits,
        is killed, ``timeout_s`` passes (None: no timeout) or the session
        stops, and counts against the session's pids limit; its output goes
        to a log that logs() and follow() read. Answers it (``pid``).

        With ``stdin=True`` (its input open for write_stdin) or ``tty=(rows,
        cols)`` (a terminal of that size) it is attached: output() reads its
        output, stdout and stderr apart (a terminal's is one stream, "pty"),
        and it does not outlive a daemon restart. ``tag`` names it
        (``Process.tag`` in list())."""
        return self._sbx.client.start_process(
            self._sbx.id, shell_argv(cmd), env=env, cwd=cwd, stdin=stdin, tty=tty, tag=tag, timeout_s=timeout_s
        )

    def write_stdin(self, pid: int, data: bytes | str, *, eof: bool = False) -> None:
        """Sends ``data`` (a str as UTF-8) to an attached process's input;
        ``eof`` closes the input after it. Conflict once it ended or its
        input is closed."""
        self._sbx.client.write_stdin(self._sbx.id, pid, data, eof=eof)

    def close_stdin(self, pid: int) -> None:
        """Closes an attached process's input: it reads end of file."""
        self._sbx.client.close_stdin(self._sbx.id, pid)

    def resize(self, pid: int, rows: int, cols: int) -> None:
        """Sets the size of an attached process's terminal (Conflict for
        one started without ``tty``)."""
        self._sbx.client.resize_process(self._sbx.id, pid, rows, cols)

    def signal(self, pid: int, signal: str | int = "TERM") -> None:
        """Sends ``signal`` (TERM, KILL, INT, HUP, or a number) to process
        pid; NotFound when there is no such process (kill() answers False
        instead)."""
        self._sbx.client.send_signal(self._sbx.id, pid, signal)

    def output(
        self, pid: int, *, follow: bool = True, from_: str | int = "start", request_timeout: float | None = None
    ) -> Generator[ProcessChunk, None, int | None]:
        """An attached process's output as ProcessChunks (``stream``,
        ``data``, ``offset``) from ``from_`` ("start": what the daemon still
        keeps, its last MiB; "now"; or a byte offset, a chunk's
        ``next_offset`` say). With ``follow`` it goes on until the process
        ends, the last chunk its end (``exit_code`` set, no data), however
        long that takes unless ``request_timeout`` bounds the wait for each
        chunk; without, it stops at what there is. The generator's value is
        the exit code (``code = yield from sbx.processes.output(pid)``)."""
        return self._sbx.client.process_output(self._sbx.id, pid, from_=from_, follow=follow, request_timeout=request_timeout)

    def list(self) -> builtins.list[Process]:
        """Every process of the sandbox (pid 1 is its agent), with its CPU
        time and memory; ``detached`` marks those started here."""
        return self._sbx.client.processes(self._sbx.id)

    def kill(self, pid: int, signal: str | int = "TERM") -> bool:
        """Sends ``signal`` (TERM, KILL, INT, HUP, or a number) to process
        pid: True once sent, False when there is no such process. pid 1 is
        InvalidArgument: stop or restart the session instead."""
        try:
            self._sbx.client.signal_process(self._sbx.id, pid, signal)
        except NotFound:
            return False
        return True

    def logs(self, pid: int, offset: int = 0) -> ProcessLogs:
        """A background process's output from byte ``offset`` (``data``),
        whether it still runs and how it ended (``exit_code``)."""
        return self._sbx.client.process_logs(self._sbx.id, pid, offset=offset)

    def follow(
        self, pid: int, *, offset: int = 0, poll_interval: float = DEFAULT_FOLLOW_INTERVAL, timeout: float | None = None
    ) -> Generator[bytes, None, int | None]:
        """A background process's output as it comes, chunks of bytes, until
        it no longer runs (``logs -f``); the generator's value is its exit
        code (``code = yield from sbx.processes.follow(pid)``). ``timeout``
        bounds the whole: past it, RequestTimeout, and it runs on."""
        return self._sbx.client.follow_process(self._sbx.id, pid, offset=offset, poll_interval=poll_interval, timeout=timeout)

    def wait(self, pid: int, *, timeout: float | None = None, poll_interval: float = DEFAULT_FOLLOW_INTERVAL) -> int | None:
        """Waits for a background process to end and answers its exit code
        (None when the daemon did not see it end: one a restarted daemon
        had started). Its output is read on the way and dropped."""
        gen = self.follow(pid, poll_interval=poll_interval, timeout=timeout)
        while True:
            try:
                next(gen)
            except StopIteration as stop:
                return stop.value  # type: ignore[no-any-return]
