"""Client: every call of the sandboxd API, one method each.

It mirrors the Go client (client/): Sandbox and the module-level run are
built on it, and it is there for callers who want the API as it is.
"""

from __future__ import annotations

from ._api_attached import AttachedProcessCalls
from ._api_contexts import ContextCalls
from ._api_exec import ExecCalls
from ._api_files import FileCalls
from ._api_files_ops import FileOpsCalls
from ._api_processes import ProcessCalls
from ._api_sessions import SessionCalls
from ._api_snapshots import SnapshotCalls
from ._api_system import SystemCalls
from ._api_undo import UndoCalls
from ._api_volumes import VolumeCalls
from ._attach import AttachCalls
from ._transport import Transport

DEFAULT_REQUEST_TIMEOUT = 60.0
"""The HTTP timeout of a call other than an execution: the longest wait for
the daemon's next bytes. A create that has to start a sandbox takes well
under a second; executions are bounded by their own timeout instead."""


class Client(SessionCalls, ExecCalls, ContextCalls, ProcessCalls, AttachedProcessCalls, AttachCalls, FileCalls, FileOpsCalls, VolumeCalls, SnapshotCalls, UndoCalls, SystemCalls):
    """A client of one daemon.

    ``socket`` is its Unix socket (default: $SANDBOXD_SOCKET, else
    /run/sandboxd/sandboxd.sock). ``request_timeout`` bounds every call
    but executions (None: wait as long as it takes); each method also takes
    ``request_timeout`` of its own. A Client holds no connection and may be
    shared between threads.
    """

    def __init__(self, socket: str | None = None, *, request_timeout: float | None = DEFAULT_REQUEST_TIMEOUT) -> None:
        self._t = Transport(socket)
        self.request_timeout = request_timeout

    @property
    def socket(self) -> str:
        """The socket path this client uses."""
        return self._t.socket

    def __repr__(self) -> str:
        return f"Client(socket={self.socket!r})"
