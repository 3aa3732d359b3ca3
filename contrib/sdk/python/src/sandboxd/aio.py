"""AsyncSandbox: the Sandbox API for asyncio.

    async with await AsyncSandbox.create(memory_mb=256) as sbx:
        r = await sbx.run_code("6 * 7")

Each call runs the blocking client in a worker thread (asyncio.to_thread),
so the event loop never waits on the socket and the SDK stays standard
library only. Two consequences: calls of one AsyncSandbox may run at once
(each has its own connection), and cancelling an awaiting task does not
stop its call: the thread finishes it, and the daemon the execution (it is
still recorded). ``await sbx.interrupt()`` stops an execution whose task
was cancelled.

Output callbacks run on the event loop, in order, and may be coroutine
functions: the call returns once every callback has run. A callback that
raises makes the call raise that, after the execution ended.
"""

from __future__ import annotations

import asyncio
import builtins
import inspect
from typing import Any, AsyncGenerator, AsyncIterator, Awaitable, Callable, Iterable, Mapping, Sequence, TypeVar

from ._api_exec import DEFAULT_POLL_INTERVAL, OnOutput
from ._api_processes import DEFAULT_FOLLOW_INTERVAL
from .client import Client
from .errors import RequestTimeout
from .models import (
    STATUS_RUNNING,
    CodeContext,
    Execution,
    ExecutionSummary,
    FileEvent,
    FileInfo,
    FileStat,
    FileWritten,
    Output,
    Process,
    ProcessChunk,
    ProcessLogs,
    Session,
    Snapshot,
    Stats,
)
from .oneshot import run
from .sandbox import Sandbox

T = TypeVar("T")

AsyncOnOutput = Callable[[str], object]
"""An output callback of the asyncio API: a function, or a coroutine function
(what it returns is awaited)."""


class _Relay:
    """Carries output from a call's worker thread to callbacks on the loop."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._pending: list[Awaitable[object]] = []
        self._error: BaseException | None = None
        self._closed = False

    def wrap(self, cb: AsyncOnOutput | None) -> OnOutput | None:
        if cb is None:
            return None

        def in_thread(data: str) -> None:
            # call_soon_threadsafe keeps order, and all of these run before
            # the call's own result reaches the awaiting task.
            self._loop.call_soon_threadsafe(self._deliver, cb, data)

        return in_thread

    def _deliver(self, cb: AsyncOnOutput, data: str) -> None:
        if self._error is not None or self._closed:
            return
        try:
            out = cb(data)
        except Exception as e:
            self._error = e
            return
        if inspect.isawaitable(out):
            self._pending.append(asyncio.ensure_future(out))

    def close(self) -> None:
        """Drops what is still to come and cancels what runs: the call failed
        or its task was cancelled, and nobody awaits the callbacks."""
        self._closed = True
        for p in self._pending:
            if isinstance(p, asyncio.Future):
                p.cancel()

    async def settle(self) -> None:
        """Waits for the coroutine callbacks and raises the first failure."""
        try:
            if self._pending:
                await asyncio.gather(*self._pending)
        finally:
            if self._error is not None:
                raise self._error


async def _streamed(
    call: Callable[..., T], on_stdout: AsyncOnOutput | None, on_stderr: AsyncOnOutput | None, on_display: Callable[[Any], object] | None = None
) -> T:
    relay = _Relay(asyncio.get_running_loop())
    args = [relay.wrap(on_stdout), relay.wrap(on_stderr)]
    if on_display is not None:
        args.append(relay.wrap(on_display))
    try:
        out = await asyncio.to_thread(call, *args)
    except BaseException:
        relay.close()
        raise
    await relay.settle()
    return out


class AsyncCommands:
    """``sbx.commands`` of an AsyncSandbox."""

    def __init__(self, sandbox: AsyncSandbox) -> None:
        self._sbx = sandbox

    async def run(
        self,
        cmd: str,
        *,
        timeout: float | None = None,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        on_stdout: AsyncOnOutput | None = None,
        on_stderr: AsyncOnOutput | None = None,
        request_timeout: float | None = None,
        context: str | CodeContext | None = None,
    ) -> Execution:
        """Runs cmd with /bin/sh (see Commands.run)."""
        return await self._sbx.run_code(
            cmd,
            language="shell",
            timeout=timeout,
            env=env,
            cwd=cwd,
            on_stdout=on_stdout,
            on_stderr=on_stderr,
            request_timeout=request_timeout,
            context=context,
        )

    async def submit(
        self,
        cmd: str,
        *,
        timeout: float | None = None,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        context: str | CodeContext | None = None,
    ) -> str:
        """Starts cmd with /bin/sh without waiting for it (see Commands.submit)."""
        return await self._sbx.submit(cmd, language="shell", timeout=timeout, env=env, cwd=cwd, context=context)

    async def run_with_input(
        self,
        cmd: str | Sequence[str],
        input: bytes | str = b"",
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        timeout: float | None = None,
    ) -> tuple[int, bytes, bytes]:
        """A command fed ``input``: (exit code, stdout, stderr) (see
        Commands.run_with_input). Cancelling the task does not end the
        command: ``timeout`` does."""
        return await asyncio.to_thread(self._sbx.sync.commands.run_with_input, cmd, input, env=env, cwd=cwd, timeout=timeout)


class AsyncContexts:
    """``sbx.contexts`` of an AsyncSandbox (see Contexts)."""

    def __init__(self, sandbox: AsyncSandbox) -> None:
        self._contexts = sandbox.sync.contexts

    async def create(self, language: str | None = None, *, cwd: str | None = None, from_: str | CodeContext | None = None) -> CodeContext:
        return await asyncio.to_thread(self._contexts.create, language, cwd=cwd, from_=from_)

    async def list(self) -> builtins.list[CodeContext]:
        return await asyncio.to_thread(self._contexts.list)

    async def delete(self, context: str | CodeContext) -> None:
        await asyncio.to_thread(self._contexts.delete, context)

    async def restart(self, context: str | CodeContext) -> CodeContext:
        return await asyncio.to_thread(self._contexts.restart, context)


class AsyncFiles:
    """``sbx.files`` of an AsyncSandbox (see Files)."""

    def __init__(self, sandbox: AsyncSandbox) -> None:
        self._files = sandbox.sync.files

    async def write(self, path: str, data: bytes | str, *, metadata: Mapping[str, str] | None = None) -> FileWritten:
        return await asyncio.to_thread(self._files.write, path, data, metadata=metadata)

    async def read(self, path: str) -> bytes:
        return await asyncio.to_thread(self._files.read, path)

    async def read_text(self, path: str, encoding: str = "utf-8") -> str:
        return await asyncio.to_thread(self._files.read_text, path, encoding)

    async def list(self, path: str = ".", depth: int = 1) -> builtins.list[FileInfo]:
        return await asyncio.to_thread(self._files.list, path, depth)

    async def stat(self, path: str) -> FileStat:
        return await asyncio.to_thread(self._files.stat, path)

    async def mkdir(self, path: str) -> FileStat:
        return await asyncio.to_thread(self._files.mkdir, path)

    async def move(self, src: str, dst: str) -> FileStat:
        return await asyncio.to_thread(self._files.move, src, dst)

    async def watch(self, path: str = ".", *, recursive: bool = False) -> AsyncIterator[FileEvent]:
        """The changes in a folder as they happen (see Files.watch), an async
        iterator; leaving the ``async for`` ends the watch."""
        it = await asyncio.to_thread(self._files.watch, path, recursive=recursive)
        try:
            while True:
                ev = await asyncio.to_thread(next, it, None)
                if ev is None:
                    return
                yield ev
        finally:
            close = getattr(it, "close", None)
            if close is not None:
                close()

    async def remove(self, path: str) -> None:
        await asyncio.to_thread(self._files.remove, path)

    async def exists(self, path: str) -> bool:
        return await asyncio.to_thread(self._files.exists, path)

    async def upload_dir(self, local: str, remote: str = ".") -> FileWritten:
        """A local folder into the sandbox, as remote/NAME (see Files.upload_dir)."""
        return await asyncio.to_thread(self._files.upload_dir, local, remote)

    async def download_dir(self, remote: str, local: str = ".") -> builtins.list[str]:
        """A folder of the sandbox into local/NAME (see Files.download_dir)."""
        return await asyncio.to_thread(self._files.download_dir, remote, local)


class AsyncProcesses:
    """``sbx.processes`` of an AsyncSandbox (see Processes)."""

    def __init__(self, sandbox: AsyncSandbox) -> None:
        self._sbx = sandbox
        self._procs = sandbox.sync.processes

    async def start(
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
        return await asyncio.to_thread(self._procs.start, cmd, env=env, cwd=cwd, stdin=stdin, tty=tty, tag=tag, timeout_s=timeout_s)

    async def write_stdin(self, pid: int, data: bytes | str, *, eof: bool = False) -> None:
        await asyncio.to_thread(self._procs.write_stdin, pid, data, eof=eof)

    async def close_stdin(self, pid: int) -> None:
        await asyncio.to_thread(self._procs.close_stdin, pid)

    async def resize(self, pid: int, rows: int, cols: int) -> None:
        await asyncio.to_thread(self._procs.resize, pid, rows, cols)

    async def signal(self, pid: int, signal: str | int = "TERM") -> None:
        await asyncio.to_thread(self._procs.signal, pid, signal)

    async def output(
        self, pid: int, *, follow: bool = True, from_: str | int = "start", request_timeout: float | None = None
    ) -> AsyncGenerator[ProcessChunk, None]:
        """An attached process's output as it comes (see Processes.output):
        the stream is read in a worker thread, chunk by chunk, so the loop
        never waits on the socket. The last chunk of a process that ended
        carries its exit code. Leaving the loop early hangs up once the
        next chunk arrives (the thread is blocked on it until then); the
        process runs on."""
        gen = self._procs.output(pid, follow=follow, from_=from_, request_timeout=request_timeout)
        done = object()

        def step() -> Any:
            try:
                return next(gen)
            except StopIteration:
                return done

        loop = asyncio.get_running_loop()
        pending: asyncio.Future[Any] | None = None
        try:
            while True:
                pending = loop.run_in_executor(None, step)
                # Shielded: a cancelled task leaves the thread in next(),
                # and the generator must not be closed under it.
                got = await asyncio.shield(pending)
                if got is done:
                    return
                yield got
        finally:
            if pending is None or pending.done():
                gen.close()
            else:
                pending.add_done_callback(lambda _: gen.close())

    async def list(self) -> builtins.list[Process]:
        return await asyncio.to_thread(self._procs.list)

    async def kill(self, pid: int, signal: str | int = "TERM") -> bool:
        return await asyncio.to_thread(self._procs.kill, pid, signal)

    async def logs(self, pid: int, offset: int = 0) -> ProcessLogs:
        return await asyncio.to_thread(self._procs.logs, pid, offset)

    async def follow(
        self, pid: int, *, offset: int = 0, poll_interval: float = DEFAULT_FOLLOW_INTERVAL, timeout: float | None = None
    ) -> AsyncGenerator[bytes, None]:
        """The output as it comes, until the process ends (see
        Processes.follow). It sleeps on the loop between asks, so
        cancelling stops it at once; the process runs on. The exit code is
        logs(pid).exit_code afterwards (an async generator has no value)."""
        if not poll_interval > 0:
            raise ValueError(f"poll_interval must be above 0, not {poll_interval!r}")
        loop = asyncio.get_running_loop()
        deadline = None if timeout is None else loop.time() + timeout
        at = max(0, int(offset))
        while True:
            got = await self.logs(pid, at)
            if got.data:
                yield got.data
                at = got.next_offset
            if not got.running:
                return
            pause = 0.0 if got.data else poll_interval
            if deadline is not None:
                left = deadline - loop.time()
                if left <= 0:
                    raise RequestTimeout(f"process {pid} of session {self._sbx.id} was still running after {timeout:g} s: follow it again from offset {at}, or kill it")
                pause = min(pause, left)
            await asyncio.sleep(pause)

    async def wait(self, pid: int, *, timeout: float | None = None, poll_interval: float = DEFAULT_FOLLOW_INTERVAL) -> int | None:
        """Waits on the loop for the process to end: its exit code (see Processes.wait)."""
        at = 0
        async for chunk in self.follow(pid, timeout=timeout, poll_interval=poll_interval):
            at += len(chunk)
        return (await self.logs(pid, at)).exit_code


class AsyncSandbox:
    """A sandboxd session for asyncio code: ``await AsyncSandbox.create(...)``
    takes the arguments of Sandbox(...); every method of Sandbox is here as
    a coroutine. ``sync`` is the Sandbox underneath."""

    commands: AsyncCommands
    files: AsyncFiles
    processes: AsyncProcesses
    contexts: AsyncContexts

    def __init__(self, sandbox: Sandbox) -> None:
        """Wraps a Sandbox; create and connect are the usual ways in."""
        self.sync = sandbox
        self.commands = AsyncCommands(self)
        self.files = AsyncFiles(self)
        self.processes = AsyncProcesses(self)
        self.contexts = AsyncContexts(self)

    @classmethod
    async def create(cls, template: str | None = None, **kwargs: Any) -> AsyncSandbox:
        """Creates a session: the arguments of Sandbox(...)."""
        return cls(await asyncio.to_thread(Sandbox, template, **kwargs))

    @classmethod
    async def connect(cls, id: str, **kwargs: Any) -> AsyncSandbox:
        """The AsyncSandbox of an existing session (see Sandbox.connect)."""
        return cls(await asyncio.to_thread(Sandbox.connect, id, **kwargs))

    @classmethod
    async def from_snapshot(cls, snapshot: str | Snapshot, count: int = 1, **kwargs: Any) -> builtins.list[AsyncSandbox]:
        """``count`` AsyncSandboxes made from a snapshot (see Sandbox.from_snapshot)."""
        return [cls(s) for s in await asyncio.to_thread(Sandbox.from_snapshot, snapshot, count, **kwargs)]

    @classmethod
    async def list(
        cls,
        label: str | Iterable[str] | None = None,
        *,
        labels: Mapping[str, str] | None = None,
        socket: str | None = None,
        client: Client | None = None,
    ) -> builtins.list[Session]:
        """Sessions carrying every label given (see Sandbox.list)."""
        return await asyncio.to_thread(Sandbox.list, label, labels=labels, socket=socket, client=client)

    @property
    def id(self) -> str:
        return self.sync.id

    @property
    def session(self) -> Session:
        return self.sync.session

    @property
    def client(self) -> Client:
        return self.sync.client

    @property
    def created(self) -> bool:
        """Whether making it made its session (see Sandbox.created)."""
        return self.sync.created

    async def info(self) -> Session:
        return await asyncio.to_thread(self.sync.info)

    async def is_running(self) -> bool:
        return await asyncio.to_thread(self.sync.is_running)

    async def stats(self) -> Stats:
        return await asyncio.to_thread(self.sync.stats)

    async def stop(self) -> Session:
        return await asyncio.to_thread(self.sync.stop)

    async def start(self) -> Session:
        return await asyncio.to_thread(self.sync.start)

    async def restart(self) -> Session:
        return await asyncio.to_thread(self.sync.restart)

    async def interrupt(self) -> bool:
        """Interrupts the running execution (see Sandbox.interrupt): the way
        to stop one whose awaiting task was cancelled."""
        return await asyncio.to_thread(self.sync.interrupt)

    async def pause(self) -> Session:
        return await asyncio.to_thread(self.sync.pause)

    async def resume(self) -> Session:
        return await asyncio.to_thread(self.sync.resume)

    async def hibernate(self) -> Session:
        return await asyncio.to_thread(self.sync.hibernate)

    async def set_deadline(self, seconds: int) -> Session:
        return await asyncio.to_thread(self.sync.set_deadline, seconds)

    async def set_network(self, network: str, **kwargs: Any) -> Session:
        return await asyncio.to_thread(self.sync.set_network, network, **kwargs)

    async def snapshot(self, name: str | None = None) -> Snapshot:
        """Keeps the session's files and settings (see Sandbox.snapshot)."""
        return await asyncio.to_thread(self.sync.snapshot, name)

    async def fork(self, count: int = 1) -> builtins.list[AsyncSandbox]:
        """``count`` new sessions that start where this one is (see Sandbox.fork)."""
        return [AsyncSandbox(s) for s in await asyncio.to_thread(self.sync.fork, count)]

    async def undo(self, steps: int = 1) -> int:
        """Takes the session back over its last executions (see Sandbox.undo)."""
        return await asyncio.to_thread(self.sync.undo, steps)

    async def kill(self) -> bool:
        return await asyncio.to_thread(self.sync.kill)

    delete = kill

    async def run_code(
        self,
        code: str,
        *,
        language: str = "python",
        timeout: float | None = None,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        on_stdout: AsyncOnOutput | None = None,
        on_stderr: AsyncOnOutput | None = None,
        request_timeout: float | None = None,
        on_display: Callable[[Output], object] | None = None,
        context: str | CodeContext | None = None,
    ) -> Execution:
        """Runs code in the session (see Sandbox.run_code); on_display may
        be a coroutine function, as the output callbacks."""
        return await _streamed(
            lambda out, err, disp=None: self.sync.run_code(
                code,
                language=language,
                timeout=timeout,
                env=env,
                cwd=cwd,
                on_stdout=out,
                on_stderr=err,
                request_timeout=request_timeout,
                on_display=disp,
                context=context,
            ),
            on_stdout,
            on_stderr,
            on_display,
        )

    async def install(
        self,
        *packages: str,
        index_url: str | None = None,
        on_stdout: AsyncOnOutput | None = None,
        on_stderr: AsyncOnOutput | None = None,
        request_timeout: float | None = None,
    ) -> Execution:
        """pip-installs packages into the session (see Sandbox.install)."""
        return await _streamed(
            lambda out, err: self.sync.install(*packages, index_url=index_url, on_stdout=out, on_stderr=err, request_timeout=request_timeout),
            on_stdout,
            on_stderr,
        )

    async def submit(
        self,
        code: str,
        *,
        language: str = "python",
        timeout: float | None = None,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        context: str | CodeContext | None = None,
    ) -> str:
        """Starts code without waiting for it; answers its id (see Sandbox.submit)."""
        return await asyncio.to_thread(self.sync.submit, code, language=language, timeout=timeout, env=env, cwd=cwd, context=context)

    async def execution(self, eid: str) -> Execution:
        """Execution eid, running or ended (see Sandbox.execution)."""
        return await asyncio.to_thread(self.sync.execution, eid)

    async def wait_execution(self, eid: str, *, timeout: float | None = None, poll_interval: float = DEFAULT_POLL_INTERVAL) -> Execution:
        """Waits for execution eid to end (see Sandbox.wait_execution).

        It sleeps on the loop between asks rather than in a worker thread,
        so cancelling the task stops the wait at once (the execution runs
        on); asyncio.timeout() around it works as ``timeout`` does."""
        if not poll_interval > 0:
            raise ValueError(f"poll_interval must be above 0, not {poll_interval!r}")
        loop = asyncio.get_running_loop()
        deadline = None if timeout is None else loop.time() + timeout
        while True:
            e = await self.execution(eid)
            if e.status != STATUS_RUNNING:
                return e
            pause = poll_interval
            if deadline is not None:
                left = deadline - loop.time()
                if left <= 0:
                    raise RequestTimeout(f"execution {eid} of session {self.id} was still running after {timeout:g} s: wait again, or interrupt it")
                pause = min(pause, left)
            await asyncio.sleep(pause)

    async def executions(self, limit: int = 0) -> builtins.list[ExecutionSummary]:
        """Summaries, newest first (see Sandbox.executions)."""
        return await asyncio.to_thread(self.sync.executions, limit)

    async def __aenter__(self) -> AsyncSandbox:
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.kill()

    def __repr__(self) -> str:
        return f"Async{self.sync!r}"


async def run_async(
    code: str,
    language: str = "python",
    *,
    on_stdout: AsyncOnOutput | None = None,
    on_stderr: AsyncOnOutput | None = None,
    **kwargs: Any,
) -> Execution:
    """run() for asyncio: code run once in a fresh sandbox (see run)."""
    return await _streamed(lambda out, err: run(code, language, on_stdout=out, on_stderr=err, **kwargs), on_stdout, on_stderr)
