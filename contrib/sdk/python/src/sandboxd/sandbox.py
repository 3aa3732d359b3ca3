"""Sandbox: one sandboxd session with E2B-like ergonomics.

    with Sandbox(template="python", memory_mb=256) as sbx:
        sbx.run_code("x = 6 * 7\\nx").result    # "42"

Creating a Sandbox creates a session; leaving the ``with`` block deletes
it. Sandbox.connect attaches to a session that exists, without owning it
any less: its ``with`` block deletes it too. With an idempotency_key, a
Sandbox made again with the same key and arguments (a retry after a lost
answer) is bound to the session the first made, not a new one.
"""

from __future__ import annotations

import builtins
from typing import Any, Iterable, Mapping, Sequence

from ._api_exec import DEFAULT_POLL_INTERVAL, OnDisplay, OnOutput, exec_request_timeout
from ._attach import Attached
from .client import DEFAULT_REQUEST_TIMEOUT, Client
from .commands import Commands
from .contexts import Contexts, context_id
from .errors import NotFound
from .files import Files
from .models import CodeContext, Execution, ExecutionSummary, Session, Snapshot, Stats, VolumeMount
from .processes import Processes, shell_argv


class Sandbox:
    """A session of sandboxd: a sandbox with a persistent Python interpreter.

    The keyword arguments are the fields of the create request (docs/API.md,
    POST /v1/sessions); absent ones take the template's or the daemon's
    defaults. ``idempotency_key`` makes the create safe to repeat: within
    24 hours, the same key and arguments give the session the first create
    made (``created`` is then False); the key with other arguments is
    Conflict. ``socket`` is the daemon's socket (default $SANDBOXD_SOCKET,
    else /run/sandboxd/sandboxd.sock); ``request_timeout`` bounds each
    call but executions (None: no bound); ``client`` shares a Client.
    ``volumes`` mounts the caller's volumes (Client.create_volume), each a
    VolumeMount or a dict ``{"name", "path", "read_only"}``. ``snapshot``
    (an id, a name or a Snapshot) makes the session from a snapshot: its
    files and settings, so only name, labels, env, idle_action, deadline_s
    and volumes may be given beside it (from_snapshot makes several).
    ``checkpoints`` (0 to 16) keeps the state before each of the last that
    many executions, for ``undo``.
    """

    commands: Commands
    """Shell commands: ``sbx.commands.run("ls -la")``."""

    files: Files
    """Files: ``sbx.files.write``, ``read``, ``list``, ``remove``, ``exists``,
    folders with ``upload_dir`` and ``download_dir``."""

    processes: Processes
    """Background processes: ``sbx.processes.start``, ``list``, ``kill``,
    ``logs``, ``follow``, ``wait``; attached ones (started with ``stdin``
    or ``tty``) ``write_stdin``, ``close_stdin``, ``resize``, ``signal``,
    ``output``."""

    contexts: Contexts
    """Code contexts, interpreters of their own: ``sbx.contexts.create``,
    ``list``, ``delete``, ``restart``; ``run_code(code, context=c)``."""

    created: bool
    """Whether making this Sandbox made its session: False for connect, and
    for a create whose idempotency_key an earlier create had used."""

    def __init__(
        self,
        template: str | None = None,
        *,
        runtime: str | None = None,
        memory_mb: int | None = None,
        cpus: float | None = None,
        pids: int | None = None,
        disk_mb: int | None = None,
        timeout_s: int | None = None,
        idle_timeout_s: int | None = None,
        network: str | None = None,
        allow: Iterable[str] | None = None,
        egress_kbps: int | None = None,
        max_connections: int | None = None,
        env: Mapping[str, str] | None = None,
        labels: Mapping[str, str] | None = None,
        mcp_servers: Iterable[str] | None = None,
        idle_action: str | None = None,
        name: str | None = None,
        deadline_s: int | None = None,
        volumes: Iterable[VolumeMount | Mapping[str, Any]] | None = None,
        snapshot: str | Snapshot | None = None,
        checkpoints: int | None = None,
        idempotency_key: str | None = None,
        socket: str | None = None,
        request_timeout: float | None = DEFAULT_REQUEST_TIMEOUT,
        client: Client | None = None,
    ) -> None:
        c = client or Client(socket, request_timeout=request_timeout)
        fields: dict[str, Any] = dict(
            template=template,
            runtime=runtime,
            memory_mb=memory_mb,
            cpus=cpus,
            pids=pids,
            disk_mb=disk_mb,
            timeout_s=timeout_s,
            idle_timeout_s=idle_timeout_s,
            network=network,
            allow=allow,
            egress_kbps=egress_kbps,
            max_connections=max_connections,
            env=env,
            labels=labels,
            mcp_servers=mcp_servers,
            idle_action=idle_action,
            name=name,
            deadline_s=deadline_s,
            volumes=volumes,
            snapshot=snapshot,
            checkpoints=checkpoints,
        )
        if idempotency_key is None:
            self._bind(c, c.create_session(**fields), True)
        else:
            self._bind(c, *c.create_session_once(idempotency_key, **fields))

    def _bind(self, client: Client, session: Session, created: bool) -> None:
        self._client = client
        self._session = session
        self.created = created
        self.commands = Commands(self)
        self.files = Files(self)
        self.processes = Processes(self)
        self.contexts = Contexts(self)

    @classmethod
    def connect(
        cls,
        id: str,
        *,
        socket: str | None = None,
        request_timeout: float | None = DEFAULT_REQUEST_TIMEOUT,
        client: Client | None = None,
    ) -> Sandbox:
        """The Sandbox of an existing session (by id); NotFound if there is
        none, or it is another user's."""
        c = client or Client(socket, request_timeout=request_timeout)
        sbx = cls.__new__(cls)
        sbx._bind(c, c.get_session(id), False)
        return sbx

    @classmethod
    def from_snapshot(
        cls,
        snapshot: str | Snapshot,
        count: int = 1,
        *,
        name: str | None = None,
        labels: Mapping[str, str] | None = None,
        env: Mapping[str, str] | None = None,
        idle_action: str | None = None,
        deadline_s: int | None = None,
        volumes: Iterable[VolumeMount | Mapping[str, Any]] | None = None,
        socket: str | None = None,
        request_timeout: float | None = DEFAULT_REQUEST_TIMEOUT,
        client: Client | None = None,
    ) -> builtins.list[Sandbox]:
        """``count`` Sandboxes (1 to 100) made from a snapshot (an id, a
        name or a Snapshot), all of them or none: each starts with its
        files and settings; ``labels`` are added to the snapshot's, ``env``
        goes over its; ``name`` only with count 1. Files only today: each
        one's first execution says ``state_reset``."""
        c = client or Client(socket, request_timeout=request_timeout)
        ss = c.create_sessions(
            snapshot, count, name=name, labels=labels, env=env, idle_action=idle_action, deadline_s=deadline_s, volumes=volumes
        )
        return [cls._bound(c, s) for s in ss]

    @classmethod
    def _bound(cls, client: Client, session: Session) -> Sandbox:
        """A Sandbox of a session a call other than the create made."""
        sbx = cls.__new__(cls)
        sbx._bind(client, session, True)
        return sbx

    @classmethod
    def list(
        cls,
        label: str | Iterable[str] | None = None,
        *,
        labels: Mapping[str, str] | None = None,
        socket: str | None = None,
        client: Client | None = None,
    ) -> builtins.list[Session]:
        """The caller's sessions (root: all), oldest first, that carry every
        label given: ``label="agent=a1"`` (or several), ``labels={...}``."""
        c = client or Client(socket)
        return c.list_sessions(label, labels=labels)

    @property
    def id(self) -> str:
        return self._session.id

    @property
    def session(self) -> Session:
        """The session as the daemon last answered it (info() asks again)."""
        return self._session

    @property
    def client(self) -> Client:
        return self._client

    def info(self) -> Session:
        """The session now: status, limits, labels, exec_count, ..."""
        self._session = self._client.get_session(self.id)
        return self._session

    def is_running(self) -> bool:
        return self.info().status == "running"

    def stats(self) -> Stats:
        """What the session uses now: memory, CPU, pids, disk."""
        return self._client.stats(self.id)

    def stop(self) -> Session:
        """Stops its processes (variables are gone); /workspace is kept."""
        self._session = self._client.stop_session(self.id)
        return self._session

    def start(self) -> Session:
        """Starts it again with a fresh interpreter (no-op if running)."""
        self._session = self._client.start_session(self.id)
        return self._session

    def restart(self) -> Session:
        """A fresh interpreter, same /workspace."""
        self._session = self._client.restart_session(self.id)
        return self._session

    def interrupt(self) -> bool:
        """Interrupts the execution running in the session, as Ctrl-C would
        (Python raises KeyboardInterrupt; a shell command gets SIGINT, then
        SIGKILL after a grace): that call answers status "interrupted" and
        the interpreter keeps its variables. False when nothing was running."""
        return self._client.interrupt(self.id)

    def pause(self) -> Session:
        """Freezes every process: memory and variables stay, CPU use stops
        (no-op if paused; Conflict while it executes). An execution, a file
        call or stats resumes it first."""
        self._session = self._client.pause_session(self.id)
        return self._session

    def resume(self) -> Session:
        """Lets a paused session run on where it stopped, and wakes a
        hibernated one (no-op if running)."""
        self._session = self._client.resume_session(self.id)
        return self._session

    def hibernate(self) -> Session:
        """Saves the memory to disk and ends the sandbox (runsc; Conflict
        under runc): RAM and CPU freed. The next execution, file call or
        resume wakes it with its variables."""
        self._session = self._client.hibernate_session(self.id)
        return self._session

    def set_deadline(self, seconds: int) -> Session:
        """Ends the session ``seconds`` from now, whatever it is doing
        (stopped, /workspace kept), earlier or later than its deadline
        before; 0 removes the deadline. ``session.deadline`` shows it."""
        self._session = self._client.update_session(self.id, deadline_s=seconds)
        return self._session

    def set_network(
        self,
        network: str,
        *,
        allow: Iterable[str] | None = None,
        egress_kbps: int | None = None,
        max_connections: int | None = None,
    ) -> Session:
        """Changes the network policy at once ("none", "allowlist" with
        ``allow``, "open"); connections it no longer allows are cut."""
        self._session = self._client.set_network(self.id, network, allow=allow, egress_kbps=egress_kbps, max_connections=max_connections)
        return self._session

    def snapshot(self, name: str | None = None) -> Snapshot:
        """Keeps the session's /workspace files and settings as a snapshot
        (``name``: the caller's name for it, unique among theirs), which
        outlives the session: Sandbox(snapshot=...) and from_snapshot make
        sessions from it, Client.delete_snapshot removes it. The session
        is frozen only while its files are read, and runs on."""
        return self._client.create_snapshot(self.id, name=name)

    def fork(self, count: int = 1) -> builtins.list[Sandbox]:
        """``count`` new Sandboxes (1 to 100) that start where this one is
        now: its files, settings and volumes (files only today: each one's
        first execution says ``state_reset``). This one runs on. Each is
        the caller's to delete, as any Sandbox."""
        return [type(self)._bound(self._client, s) for s in self._client.fork_session(self.id, count=count)]

    def undo(self, steps: int = 1) -> int:
        """Takes the session back over its last ``steps`` executions (1 to
        16): the interpreters they ran in get back their variables and
        imports from before them, and /workspace its files. Answers how
        many were undone. FailedPrecondition for a session made without
        ``checkpoints``, or for more steps than it keeps. Network effects,
        /tmp and other processes are not rolled back."""
        return self._client.undo(self.id, steps=steps)

    def kill(self) -> bool:
        """Deletes the session and everything of it; False if it was gone already."""
        try:
            self._client.delete_session(self.id)
        except NotFound:
            return False
        return True

    delete = kill

    def run_code(
        self,
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
        context: str | CodeContext | None = None,
    ) -> Execution:
        """Runs code in the session's interpreter, whose variables live on
        between calls; ``context`` (an id or a CodeContext of
        sbx.contexts) runs it in that context's interpreter instead. ``timeout`` (seconds) is the execution's own, else
        the session's timeout_s. With ``on_stdout`` / ``on_stderr`` the
        output is streamed to them as it comes, and with ``on_display``
        each Output the code displays (``display(obj)``, a builtin in
        cells) as it does. The answer is an Execution whatever the code
        did: check ``status``, ``error``, ``result``; ``outputs`` holds
        what was displayed, the last expression's rich representations
        and the figures, in order."""
        limit = timeout if timeout is not None else (self._session.limits.timeout_s or None)
        return self._client.exec(
            self.id,
            code,
            language=language,
            timeout=timeout,
            env=env,
            cwd=cwd,
            on_stdout=on_stdout,
            on_stderr=on_stderr,
            request_timeout=exec_request_timeout(request_timeout, limit),
            on_display=on_display,
            context=context_id(context),
        )

    def install(
        self,
        *packages: str,
        index_url: str | None = None,
        on_stdout: OnOutput | None = None,
        on_stderr: OnOutput | None = None,
        request_timeout: float | None = None,
    ) -> Execution:
        """pip-installs packages ("numpy==1.26.4", "rich[jupyter]") into the
        session's /workspace, from ``index_url`` or the daemon's package
        index, which is opened to the session for the install alone. The
        interpreter imports them at once. A failed install is an Execution
        with pip's exit code, not an exception."""
        return self._client.install_packages(
            self.id, builtins.list(packages), index_url=index_url, on_stdout=on_stdout, on_stderr=on_stderr, request_timeout=request_timeout
        )

    def submit(
        self,
        code: str,
        *,
        language: str = "python",
        timeout: float | None = None,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        context: str | CodeContext | None = None,
    ) -> str:
        """Starts code in the session without waiting for it, and answers
        the execution's id (the code runs on, within its ``timeout``, else
        the session's timeout_s). execution(eid) tells how it goes, with the
        output so far; wait_execution(eid) waits for its end. An execution
        sent while it runs waits its turn. ``context`` as run_code's."""
        return self._client.start_exec(self.id, code, language=language, timeout=timeout, env=env, cwd=cwd, context=context_id(context))

    def execution(self, eid: str) -> Execution:
        """Execution eid of the session: status "running" with its output so
        far while it runs, then the whole Execution while the history keeps
        it (NotFound after)."""
        return self._client.execution(self.id, eid)

    def wait_execution(self, eid: str, *, timeout: float | None = None, poll_interval: float = DEFAULT_POLL_INTERVAL) -> Execution:
        """Waits for execution eid to end (asking every ``poll_interval``
        seconds) and answers it. ``timeout`` bounds the wait: past it,
        RequestTimeout, and the execution runs on (interrupt() stops it)."""
        return self._client.wait_execution(self.id, eid, timeout=timeout, poll_interval=poll_interval)

    def executions(self, limit: int = 0) -> builtins.list[ExecutionSummary]:
        """The session's executions, newest first (those running first), as
        summaries without output: execution(eid) has one whole."""
        return self._client.executions(self.id, limit=limit)

    def attach(
        self,
        cmd: str | Sequence[str],
        *,
        tty: bool = False,
        rows: int | None = None,
        cols: int | None = None,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
    ) -> Attached:
        """Runs a command (a list as it is, a string with /bin/sh) with its
        standard streams on a connection of its own (exec -i, -it with
        ``tty``): write(), close_stdin(), resize(), read() and wait() (see
        Client.attach). Use it in a ``with`` block: leaving it ends the
        command if it still runs."""
        return self._client.attach(self.id, shell_argv(cmd), tty=tty, rows=rows, cols=cols, env=env, cwd=cwd)

    def __enter__(self) -> Sandbox:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.kill()

    def __repr__(self) -> str:
        return f"Sandbox(id={self.id!r}, status={self._session.status!r}, socket={self._client.socket!r})"
