"""Typed answers of the sandboxd API (the wire types of api/types.go).

Each is a frozen dataclass read from the daemon's JSON with ``from_json``.
Reading is lenient: a field a newer daemon adds is ignored and a field an
older one lacks takes its zero value, so the SDK and the daemon can be
upgraded apart.
"""

from __future__ import annotations

import base64
import json as _json
import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Mapping

__all__ = [
    "Limits",
    "Session",
    "ExecutionError",
    "Output",
    "ExecMetrics",
    "Execution",
    "ExecutionSummary",
    "FileInfo",
    "FileWritten",
    "Stats",
    "Process",
    "ProcessLogs",
    "ProcessChunk",
    "HealthCheck",
    "DataDirHealth",
    "ErrorDetail",
    "Health",
    "Snapshot",
    "Volume",
    "VolumeMount",
]

# Execution statuses (docs/API.md, Execution). A timeout or a kill is not an
# exception: it is an Execution with one of these. "running" is the status
# of one started with wait false (Client.start_exec) that has not ended.
STATUS_RUNNING = "running"
STATUS_OK = "ok"
STATUS_ERROR = "error"
STATUS_TIMEOUT = "timeout"
STATUS_KILLED = "killed"
STATUS_INTERRUPTED = "interrupted"
STATUS_LOST = "lost"


# Go writes times with up to nine digits of fraction and a Z; before 3.11
# fromisoformat takes neither.
_RFC3339 = re.compile(r"^(.*T\d\d:\d\d:\d\d)(?:\.(\d+))?(Z|[+-]\d\d:\d\d)$")


def _time(v: Any) -> datetime | None:
    """An RFC 3339 time of the wire; None when absent or Go's zero time."""
    if not isinstance(v, str) or not v or v.startswith("0001-01-01"):
        return None
    m = _RFC3339.match(v)
    if m is None:
        return None
    frac = f".{(m.group(2) or '')[:6]:0<6}" if m.group(2) else ""
    zone = "+00:00" if m.group(3) == "Z" else m.group(3)
    try:
        return datetime.fromisoformat(m.group(1) + frac + zone)
    except ValueError:
        return None


def _str(d: Mapping[str, Any], k: str) -> str:
    v = d.get(k)
    return v if isinstance(v, str) else ""


def _int(d: Mapping[str, Any], k: str) -> int:
    v = d.get(k)
    return int(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else 0


def _float(d: Mapping[str, Any], k: str) -> float:
    v = d.get(k)
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else 0.0


def _opt_int(d: Mapping[str, Any], k: str) -> int | None:
    """An int the wire may leave out, where absent is not 0 (caller_uid 0 is root)."""
    v = d.get(k)
    return int(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def _map(d: Mapping[str, Any], k: str) -> dict[str, str]:
    v = d.get(k)
    return {str(a): str(b) for a, b in v.items()} if isinstance(v, dict) else {}


def _strs(d: Mapping[str, Any], k: str) -> list[str]:
    v = d.get(k)
    return [str(x) for x in v] if isinstance(v, list) else []


@dataclass(frozen=True)
class Limits:
    """The resources one session may use (docs/API.md, Session)."""

    memory_mb: int = 0
    cpus: float = 0.0
    pids: int = 0
    disk_mb: int = 0
    timeout_s: int = 0
    idle_timeout_s: int = 0

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Limits:
        return cls(
            memory_mb=_int(d, "memory_mb"),
            cpus=_float(d, "cpus"),
            pids=_int(d, "pids"),
            disk_mb=_int(d, "disk_mb"),
            timeout_s=_int(d, "timeout_s"),
            idle_timeout_s=_int(d, "idle_timeout_s"),
        )


@dataclass(frozen=True)
class Session:
    """One sandbox with its persistent interpreter, as the daemon last told it."""

    id: str
    status: str = ""
    template: str = ""
    runtime: str = ""
    owner_uid: int = 0
    reason: str = ""
    created_at: datetime | None = None
    last_used_at: datetime | None = None
    exec_count: int = 0
    limits: Limits = field(default_factory=Limits)
    network: str = ""
    allow: list[str] = field(default_factory=list)
    egress_kbps: int = 0
    max_connections: int = 0
    labels: dict[str, str] = field(default_factory=dict)
    mcp_servers: list[str] = field(default_factory=list)
    idle_action: str = ""
    name: str = ""
    # When the session ends whatever it does (UTC); None: no deadline.
    deadline: datetime | None = None
    volumes: list[VolumeMount] = field(default_factory=list)
    # How many executions undo can go back (0: none; Sandbox(checkpoints=K)).
    checkpoints: int = 0

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Session:
        lim = d.get("limits")
        return cls(
            id=_str(d, "id"),
            status=_str(d, "status"),
            template=_str(d, "template"),
            runtime=_str(d, "runtime"),
            owner_uid=_int(d, "owner_uid"),
            reason=_str(d, "reason"),
            created_at=_time(d.get("created_at")),
            last_used_at=_time(d.get("last_used_at")),
            exec_count=_int(d, "exec_count"),
            limits=Limits.from_json(lim) if isinstance(lim, dict) else Limits(),
            network=_str(d, "network"),
            allow=_strs(d, "allow"),
            egress_kbps=_int(d, "egress_kbps"),
            max_connections=_int(d, "max_connections"),
            labels=_map(d, "labels"),
            mcp_servers=_strs(d, "mcp_servers"),
            idle_action=_str(d, "idle_action"),
            name=_str(d, "name"),
            deadline=_time(d.get("deadline")),
            volumes=[VolumeMount.from_json(v) for v in d.get("volumes") or [] if isinstance(v, dict)],
            checkpoints=_int(d, "checkpoints"),
        )


@dataclass(frozen=True)
class ExecutionError:
    """A Python exception raised by the executed code."""

    name: str
    value: str = ""
    traceback: str = ""

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> ExecutionError:
        return cls(name=_str(d, "name"), value=_str(d, "value"), traceback=_str(d, "traceback"))

    def __str__(self) -> str:
        return f"{self.name}: {self.value}" if self.value else self.name


BINARY_MIMES = ("image/png", "image/jpeg")
"""The types whose bundle data is base64; the others' is text."""


@dataclass(frozen=True)
class Output:
    """One rich output of an execution: a matplotlib figure, what the
    code's ``display()`` showed, or the last expression's rich
    representations (a DataFrame's HTML).

    ``mime`` and ``data`` are the richest representation, ``data`` base64
    as on the wire (``content`` is it decoded); ``bundle`` has every
    representation, Jupyter's way (mime -> data: text as text, images
    base64; empty for a figure). ``png``, ``jpeg``, ``svg``, ``html``,
    ``markdown``, ``json`` and ``text`` give each representation in the
    form its type fits, None when the output has none of that type.
    """

    mime: str
    data: str = ""
    bundle: dict[str, str] = field(default_factory=dict)

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Output:
        return cls(mime=_str(d, "mime"), data=_str(d, "data"), bundle=_map(d, "bundle"))

    @property
    def content(self) -> bytes:
        return base64.b64decode(self.data)

    def _bytes(self, mime: str) -> bytes | None:
        if mime in self.bundle:
            v = self.bundle[mime]
            return base64.b64decode(v) if mime in BINARY_MIMES else v.encode("utf-8")
        return self.content if self.mime == mime else None

    def _text(self, mime: str) -> str | None:
        if mime in self.bundle and mime not in BINARY_MIMES:
            return self.bundle[mime]
        b = self._bytes(mime)
        return b.decode("utf-8", "replace") if b is not None else None

    @property
    def markdown(self) -> str | None:
        return self._text("text/markdown")

    @property
    def json(self) -> Any:
        """The application/json representation, parsed (None without one)."""
        t = self._text("application/json")
        return _json.loads(t) if t is not None else None

    @property
    def png(self) -> bytes | None:
        return self._bytes("image/png")

    @property
    def jpeg(self) -> bytes | None:
        return self._bytes("image/jpeg")

    @property
    def svg(self) -> str | None:
        return self._text("image/svg+xml")

    @property
    def html(self) -> str | None:
        return self._text("text/html")

    @property
    def text(self) -> str | None:
        return self._text("text/plain")


@dataclass(frozen=True)
class ExecMetrics:
    """What one execution used: ``wall_ms`` is its duration; ``cpu_ms`` and
    ``memory_peak_bytes`` are the session's cgroup's CPU time and memory
    peak while it ran (the interpreter, what it started, and anything else
    the session ran meanwhile)."""

    wall_ms: float = 0.0
    cpu_ms: float = 0.0
    memory_peak_bytes: int = 0

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> ExecMetrics:
        return cls(wall_ms=_float(d, "wall_ms"), cpu_ms=_float(d, "cpu_ms"), memory_peak_bytes=_int(d, "memory_peak_bytes"))


def _metrics(d: Mapping[str, Any]) -> ExecMetrics | None:
    m = d.get("metrics")
    return ExecMetrics.from_json(m) if isinstance(m, dict) else None


@dataclass(frozen=True)
class Execution:
    """The outcome of one piece of code (docs/API.md, Execution).

    ``status`` is ``ok``, ``error``, ``timeout``, ``killed``,
    ``interrupted`` or ``lost``, or ``running`` for one started with wait
    false that has not ended (its output so far); ``result`` is the repr of
    Python's last expression (None when there is none); ``error`` the
    exception, if any. ``metrics``, ``code_sha256`` and ``caller_uid`` are
    None or empty from a daemon (or a history) older than them.
    """

    id: str = ""
    session_id: str = ""
    language: str = ""
    status: str = ""
    stdout: str = ""
    stderr: str = ""
    exit_code: int = 0
    result: str | None = None
    error: ExecutionError | None = None
    outputs: list[Output] = field(default_factory=list)
    started_at: datetime | None = None
    duration_ms: float = 0.0
    truncated: bool = False
    state_reset: bool = False
    summarized: bool = False
    metrics: ExecMetrics | None = None
    code_sha256: str = ""
    caller_uid: int | None = None

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Execution:
        err = d.get("error")
        outs = d.get("outputs")
        res = d.get("result")
        return cls(
            id=_str(d, "id"),
            session_id=_str(d, "session_id"),
            language=_str(d, "language"),
            status=_str(d, "status"),
            stdout=_str(d, "stdout"),
            stderr=_str(d, "stderr"),
            exit_code=_int(d, "exit_code"),
            result=res if isinstance(res, str) else None,
            error=ExecutionError.from_json(err) if isinstance(err, dict) else None,
            outputs=[Output.from_json(o) for o in outs if isinstance(o, dict)] if isinstance(outs, list) else [],
            started_at=_time(d.get("started_at")),
            duration_ms=_float(d, "duration_ms"),
            truncated=d.get("truncated") is True,
            state_reset=d.get("state_reset") is True,
            summarized=d.get("summarized") is True,
            metrics=_metrics(d),
            code_sha256=_str(d, "code_sha256"),
            caller_uid=_opt_int(d, "caller_uid"),
        )

    @property
    def ok(self) -> bool:
        """The code ran to its end without an exception or a non-zero exit."""
        return self.status == STATUS_OK

    @property
    def text(self) -> str | None:
        """The result, as E2B's Execution.text names it."""
        return self.result


@dataclass(frozen=True)
class ExecutionSummary:
    """One execution as the list of a session's executions gives it
    (GET /v1/sessions/{id}/executions): how it went, without its output.
    Client.execution (Sandbox.execution) has the whole of it while the
    history keeps it. ``exit_code`` is None while it runs."""

    id: str = ""
    language: str = ""
    code_sha256: str = ""
    caller_uid: int | None = None
    started_at: datetime | None = None
    duration_ms: float = 0.0
    status: str = ""
    exit_code: int | None = None
    metrics: ExecMetrics | None = None
    state_reset: bool = False
    truncated: bool = False

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> ExecutionSummary:
        return cls(
            id=_str(d, "id"),
            language=_str(d, "language"),
            code_sha256=_str(d, "code_sha256"),
            caller_uid=_opt_int(d, "caller_uid"),
            started_at=_time(d.get("started_at")),
            duration_ms=_float(d, "duration_ms"),
            status=_str(d, "status"),
            exit_code=_opt_int(d, "exit_code"),
            metrics=_metrics(d),
            state_reset=d.get("state_reset") is True,
            truncated=d.get("truncated") is True,
        )

    @property
    def ok(self) -> bool:
        """It ran to its end without an exception or a non-zero exit."""
        return self.status == STATUS_OK


@dataclass(frozen=True)
class FileInfo:
    """One entry of a folder listing; ``type`` is file, dir, symlink or other."""

    name: str
    type: str = ""
    size: int = 0
    mode: str = ""
    modified_at: datetime | None = None
    path: str = ""
    """The entry's whole path, in a listing deeper than one level ("" otherwise)."""
    permissions: str = ""
    """The permission bits as ls writes them ("-rw-r--r--")."""
    metadata: dict[str, str] = field(default_factory=dict)
    """The entry's user metadata (its user. extended attributes); {} when none."""

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> FileInfo:
        return cls(
            name=_str(d, "name"),
            type=_str(d, "type"),
            size=_int(d, "size"),
            mode=_str(d, "mode"),
            modified_at=_time(d.get("modified_at")),
            path=_str(d, "path"),
            permissions=_str(d, "permissions"),
            metadata=_map(d, "metadata"),
        )

    @property
    def is_dir(self) -> bool:
        return self.type == "dir"


@dataclass(frozen=True)
class FileStat:
    """A file, folder or symlink (never followed), as GET …/files/stat
    answers: ``type`` is file, dir, symlink or other; ``mode`` the octal
    permission bits ("0644"), ``permissions`` as ls writes them
    ("-rw-r--r--"); ``owner`` and ``group`` the sandbox's names (or the
    number); ``created`` only from mkdir: whether it made the folder."""

    name: str
    path: str = ""
    type: str = ""
    size: int = 0
    mode: str = ""
    permissions: str = ""
    owner: str = ""
    group: str = ""
    mtime: datetime | None = None
    symlink_target: str | None = None
    created: bool | None = None
    metadata: dict[str, str] = field(default_factory=dict)
    """The user metadata of a file or folder (files.write's ``metadata``); {} when none."""

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> FileStat:
        created = d.get("created")
        return cls(
            name=_str(d, "name"),
            path=_str(d, "path"),
            type=_str(d, "type"),
            size=_int(d, "size"),
            mode=_str(d, "mode"),
            permissions=_str(d, "permissions"),
            owner=_str(d, "owner"),
            group=_str(d, "group"),
            mtime=_time(d.get("mtime")),
            symlink_target=d.get("symlink_target") or None,
            created=created if isinstance(created, bool) else None,
            metadata=_map(d, "metadata"),
        )

    @property
    def is_dir(self) -> bool:
        return self.type == "dir"


@dataclass(frozen=True)
class CodeContext:
    """A code context of a session (sbx.contexts): an interpreter of its
    own, whose globals and imports no other context sees, or for
    ``language`` "shell" a working folder; ``cwd`` is where its executions
    run unless they say another. "default" is the session's first one."""

    id: str
    language: str = ""
    cwd: str = ""
    created_at: datetime | None = None

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> CodeContext:
        return cls(id=_str(d, "id"), language=_str(d, "language"), cwd=_str(d, "cwd"), created_at=_time(d.get("created_at")))


@dataclass(frozen=True)
class VolumeMount:
    """A volume a session mounts: the caller's volume ``name`` at ``path``
    in the sandbox (absolute), read-only or not. Sandbox(volumes=[...])
    takes these or dicts of the same keys; Session.volumes reads them back."""

    name: str
    path: str = ""
    read_only: bool = False

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> VolumeMount:
        return cls(name=_str(d, "name"), path=_str(d, "path"), read_only=d.get("read_only") is True)

    def to_json(self) -> dict[str, Any]:
        """The wire's object; read_only only when set, as the daemon writes it."""
        body: dict[str, Any] = {"name": self.name, "path": self.path}
        if self.read_only:
            body["read_only"] = True
        return body


@dataclass(frozen=True)
class Volume:
    """A filesystem of its own size that outlives sessions (docs/API.md,
    Volumes): writes past ``size_mb`` fail with ENOSPC inside; ``mounted_by``
    are the sessions whose records name it, running or not, and while there
    are any it cannot be deleted (Conflict)."""

    name: str
    size_mb: int = 0
    used_mb: int = 0
    owner_uid: int = 0
    created_at: datetime | None = None
    mounted_by: list[str] = field(default_factory=list)
    #: other users whose sessions may mount it too, as "{owner_uid}/{name}"
    shared_with: list[int] = field(default_factory=list)

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Volume:
        return cls(
            name=_str(d, "name"),
            size_mb=_int(d, "size_mb"),
            used_mb=_int(d, "used_mb"),
            owner_uid=_int(d, "owner_uid"),
            created_at=_time(d.get("created_at")),
            mounted_by=_strs(d, "mounted_by"),
            shared_with=[u for u in d.get("shared_with") or [] if isinstance(u, int) and not isinstance(u, bool)],
        )


@dataclass(frozen=True)
class Snapshot:
    """A session's state kept beyond it (docs/API.md, Snapshots): its
    /workspace files and settings, and with ``memory`` its interpreter's
    variables too. Sessions are made from it as often as wanted
    (``Sandbox(snapshot=...)``, ``Sandbox.from_snapshot``). With ``memory``
    False (files only) the first execution of such a session says
    ``state_reset``."""

    id: str
    session_id: str = ""
    name: str = ""
    owner_uid: int = 0
    template: str = ""
    runtime: str = ""
    memory: bool = False
    size_mb: int = 0
    created_at: datetime | None = None

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Snapshot:
        return cls(
            id=_str(d, "id"),
            session_id=_str(d, "session_id"),
            name=_str(d, "name"),
            owner_uid=_int(d, "owner_uid"),
            template=_str(d, "template"),
            runtime=_str(d, "runtime"),
            memory=d.get("memory") is True,
            size_mb=_int(d, "size_mb"),
            created_at=_time(d.get("created_at")),
        )


@dataclass(frozen=True)
class FileEvent:
    """One change a watch saw: ``type`` is create, write, remove, rename
    (the old path; the new one comes as a create), chmod, or overflow (no
    path: the kernel dropped events)."""

    type: str
    path: str = ""

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> FileEvent:
        return cls(type=_str(d, "type"), path=_str(d, "path"))


@dataclass(frozen=True)
class FileWritten:
    """The answer of an upload: the path as the daemon took it, and its
    size; for a folder sent as a tar stream, the size of its files and
    ``files``, how many it wrote (0 for a single file's upload)."""

    path: str
    size: int = 0
    files: int = 0

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> FileWritten:
        return cls(path=_str(d, "path"), size=_int(d, "size"), files=_int(d, "files"))


@dataclass(frozen=True)
class Stats:
    """What a session uses now (GET /v1/sessions/{id}/stats)."""

    status: str = ""
    exec_count: int = 0
    uptime_s: float = 0.0
    cpu_seconds: float = 0.0
    memory_bytes: int = 0
    memory_limit_bytes: int = 0
    pids: int = 0
    disk_bytes: int = 0
    disk_limit_bytes: int = 0
    dns_refused: int = 0
    dns_rate_limited: int = 0
    network_denied_packets: int = 0

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Stats:
        return cls(
            status=_str(d, "status"),
            exec_count=_int(d, "exec_count"),
            uptime_s=_float(d, "uptime_s"),
            cpu_seconds=_float(d, "cpu_seconds"),
            memory_bytes=_int(d, "memory_bytes"),
            memory_limit_bytes=_int(d, "memory_limit_bytes"),
            pids=_int(d, "pids"),
            disk_bytes=_int(d, "disk_bytes"),
            disk_limit_bytes=_int(d, "disk_limit_bytes"),
            dns_refused=_int(d, "dns_refused"),
            dns_rate_limited=_int(d, "dns_rate_limited"),
            network_denied_packets=_int(d, "network_denied_packets"),
        )


@dataclass(frozen=True)
class Process:
    """One process of a session's sandbox, as the sandbox names it (pid 1
    is its agent). ``detached`` says it was started in the background
    (Sandbox.processes.start), so its output has a log; ``exit_code`` is
    how such a process ended, when the daemon saw it (None while it runs).
    ``rss_bytes`` is 0 under runsc, which does not say, and ``started_at``
    None there."""

    pid: int
    ppid: int = 0
    command: str = ""
    started_at: datetime | None = None
    cpu_seconds: float = 0.0
    rss_bytes: int = 0
    detached: bool = False
    exit_code: int | None = None
    # An attached process (started with stdin or a tty: the daemon holds
    # its streams) says what it was started with.
    attached: bool = False
    argv: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    cwd: str = ""
    tag: str = ""
    tty: dict[str, int] | None = None

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Process:
        tty = d.get("tty")
        return cls(
            pid=_int(d, "pid"),
            ppid=_int(d, "ppid"),
            command=_str(d, "command"),
            started_at=_time(d.get("started_at")),
            cpu_seconds=_float(d, "cpu_seconds"),
            rss_bytes=_int(d, "rss_bytes"),
            detached=d.get("detached") is True,
            exit_code=_opt_int(d, "exit_code"),
            attached=d.get("attached") is True,
            argv=_strs(d, "argv"),
            env=_map(d, "env"),
            cwd=_str(d, "cwd"),
            tag=_str(d, "tag"),
            tty={"rows": _int(tty, "rows"), "cols": _int(tty, "cols")} if isinstance(tty, dict) else None,
        )


@dataclass(frozen=True)
class ProcessLogs:
    """A background process's output from ``offset`` (GET
    …/processes/{pid}/logs): ``data`` is what it wrote since, ``running``
    whether it still runs, ``exit_code`` how it ended once the daemon saw
    it (None while it runs, or for one this daemon did not start). Ask
    again from ``next_offset`` for what comes after."""

    data: bytes = b""
    running: bool = False
    exit_code: int | None = None
    offset: int = 0

    @property
    def next_offset(self) -> int:
        return self.offset + len(self.data)

    @property
    def text(self) -> str:
        """``data`` as UTF-8 (a character cut between two reads is replaced)."""
        return self.data.decode("utf-8", "replace")


@dataclass(frozen=True)
class ProcessChunk:
    """One line of an attached process's output (GET
    …/processes/{pid}/output): a piece of what it wrote on ``stream``
    ("stdout", "stderr", or "pty" for a terminal's one stream) starting at
    byte ``offset`` of all its output, or its end, the last one, whose
    ``exit_code`` is set and ``data`` empty. ``lost``, on the first, says
    how many bytes before ``offset`` the daemon no longer keeps (it keeps
    the last MiB)."""

    stream: str = ""
    data: bytes = b""
    offset: int = 0
    exit_code: int | None = None
    lost: int = 0

    @property
    def ended(self) -> bool:
        """Whether this is the process's end (its exit code)."""
        return self.exit_code is not None

    @property
    def next_offset(self) -> int:
        """Where the output after this chunk starts: ``from_`` of a read
        that goes on from here."""
        return self.offset + len(self.data)

    @property
    def text(self) -> str:
        """``data`` as UTF-8 (a character cut between two chunks is replaced)."""
        return self.data.decode("utf-8", "replace")

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> ProcessChunk:
        # Bad base64 raises ValueError: output silently dropped would be
        # worse than a failed read (the caller maps it to ProtocolError).
        raw = d.get("data_b64")
        data = base64.b64decode(raw, validate=True) if isinstance(raw, str) and raw else b""
        return cls(stream=_str(d, "stream"), data=data, offset=_int(d, "offset"), exit_code=_opt_int(d, "exit_code"), lost=_int(d, "lost"))


@dataclass(frozen=True)
class HealthCheck:
    """One check of GET /v1/health: whether it passed, and what it found."""

    ok: bool = False
    detail: str = ""

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> HealthCheck:
        return cls(ok=d.get("ok") is True, detail=_str(d, "detail"))


@dataclass(frozen=True)
class DataDirHealth:
    """The space left where session disks live: below ``min_free_mb`` no
    new disk is made."""

    free_mb: int = 0
    min_free_mb: int = 0
    ok: bool = False

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> DataDirHealth:
        return cls(free_mb=_int(d, "free_mb"), min_free_mb=_int(d, "min_free_mb"), ok=d.get("ok") is True)


@dataclass(frozen=True)
class ErrorDetail:
    """The contract's error body, ``{"code", "message"}``, where an answer
    carries one beside its own fields (an unhealthy Health)."""

    code: str = ""
    message: str = ""

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> ErrorDetail:
        return cls(code=_str(d, "code"), message=_str(d, "message"))


@dataclass(frozen=True)
class Health:
    """The daemon's health (GET /v1/health): ``status`` is "ok", or
    "unhealthy" (HTTP 503) with ``reasons``, a sentence per failed check;
    "degraded" came from daemons before the checks (a data dir short of
    space, still serving). ``checks`` has every check by name (database,
    cgroups, pools, data_dir; none from an older daemon)."""

    status: str = ""
    reasons: list[str] = field(default_factory=list)
    checks: dict[str, HealthCheck] = field(default_factory=dict)
    data_dir: DataDirHealth | None = None
    error: ErrorDetail | None = None

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Health:
        checks = d.get("checks")
        dd = d.get("data_dir")
        err = d.get("error")
        return cls(
            status=_str(d, "status"),
            reasons=_strs(d, "reasons"),
            checks={str(k): HealthCheck.from_json(v) for k, v in checks.items() if isinstance(v, dict)} if isinstance(checks, dict) else {},
            data_dir=DataDirHealth.from_json(dd) if isinstance(dd, dict) else None,
            error=ErrorDetail.from_json(err) if isinstance(err, dict) else None,
        )

    @property
    def ok(self) -> bool:
        """Every check passed: the daemon does all of its work."""
        return self.status == "ok"
