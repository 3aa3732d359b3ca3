"""The fuller file calls: stat, mkdir -p, move, listing to a depth, watch.

Paths follow the file calls' rules: a relative one is taken from
/workspace, and only /workspace and /tmp are served.
"""

from __future__ import annotations

from typing import Iterator

from ._transport import STREAM_MIME, Answer, Caller, api_path
from .errors import error_from_answer
from .models import FileEvent, FileInfo, FileStat


class FileOpsCalls(Caller):
    """The fuller files endpoints; mixed into Client."""

    def stat_file(self, id: str, path: str, *, request_timeout: float | None = None) -> FileStat:
        """GET …/files/stat: a file, folder or symlink (never followed)."""
        with self._t.send(
            "GET", api_path("v1", "sessions", id, "files", "stat"), query=[("path", path)], timeout=self._timeout(request_timeout)
        ) as a:
            return FileStat.from_json(a.json() or {})

    def make_folder(self, id: str, path: str, *, request_timeout: float | None = None) -> FileStat:
        """POST …/files/mkdir: makes a folder and those above it; ``created``
        says whether this call made it (False: it was there)."""
        with self._t.send(
            "POST", api_path("v1", "sessions", id, "files", "mkdir"), json_body={"path": path}, timeout=self._timeout(request_timeout)
        ) as a:
            return FileStat.from_json(a.json() or {})

    def move_file(self, id: str, src: str, dst: str, *, request_timeout: float | None = None) -> FileStat:
        """POST …/files/move: renames within /workspace or within /tmp; never
        replaces (Conflict if ``dst`` exists). Answers ``dst``'s stat."""
        with self._t.send(
            "POST",
            api_path("v1", "sessions", id, "files", "move"),
            json_body={"from": src, "to": dst},
            timeout=self._timeout(request_timeout),
        ) as a:
            return FileStat.from_json(a.json() or {})

    def list_folder(self, id: str, path: str, depth: int = 1, *, request_timeout: float | None = None) -> list[FileInfo]:
        """GET …/files?depth=N: a folder's entries to ``depth`` levels (deeper
        entries carry their whole ``path``); PayloadTooLarge past 10000."""
        with self._t.send(
            "GET",
            api_path("v1", "sessions", id, "files"),
            query=[("path", path), ("depth", str(depth))],
            timeout=self._timeout(request_timeout),
        ) as a:
            return [FileInfo.from_json(e) for e in (a.json() or {}).get("entries") or [] if isinstance(e, dict)]

    def watch_files(self, id: str, path: str, *, recursive: bool = False, request_timeout: float | None = None) -> Iterator[FileEvent]:
        """GET …/files/watch: the changes in a folder (and below it,
        recursive) as they happen. The iterator ends when the daemon ends the
        stream (the session's sandbox or the folder is gone); closing it
        (``close()``, or leaving a ``with contextlib.closing(...)``) ends the
        watch. A stream that fails raises its error. A quiet watch is not an
        error: no read timeout applies unless ``request_timeout`` is given."""
        q = [("path", path)]
        if recursive:
            q.append(("recursive", "1"))
        a = self._t.send("GET", api_path("v1", "sessions", id, "files", "watch"), query=q, accept=STREAM_MIME, timeout=request_timeout)
        return _events(a)


def _events(a: Answer) -> Iterator[FileEvent]:
    with a:
        for ev in a.lines():
            if ev.get("type") == "error":
                d = ev.get("error")
                if not isinstance(d, dict):
                    d = {}
                raise error_from_answer(
                    None,
                    str(d.get("code") or "internal"),
                    str(d.get("message") or "sandboxd ended the watch with an error"),
                    request_id=a.request_id,
                )
            yield FileEvent.from_json(ev)
