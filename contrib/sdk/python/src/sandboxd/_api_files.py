"""File calls of the API: upload, download or list, delete.

Paths are paths inside the sandbox; a relative one is taken from
/workspace, and only /workspace and /tmp are served (400 otherwise).
"""

from __future__ import annotations

from typing import IO

from ._transport import Caller, api_path
from .models import FileInfo, FileWritten


class FileCalls(Caller):
    """The files endpoints; mixed into Client."""

    def put_file(self, id: str, path: str, data: bytes | str | IO[bytes], *, request_timeout: float | None = None) -> FileWritten:
        """PUT …/files: writes a file (str as UTF-8; a binary file object is
        streamed), making its parent folders. It replaces an old file only
        once complete."""
        with self._t.send(
            "PUT", api_path("v1", "sessions", id, "files"), query=[("path", path)], body=data, timeout=self._timeout(request_timeout)
        ) as a:
            return FileWritten.from_json(a.json())

    def get_file(self, id: str, path: str, *, request_timeout: float | None = None) -> bytes | list[FileInfo]:
        """GET …/files: a file's bytes, or for a folder its entries."""
        with self._t.send("GET", api_path("v1", "sessions", id, "files"), query=[("path", path)], timeout=self._timeout(request_timeout)) as a:
            # The daemon tells a folder by answering JSON, a file by bytes.
            if a.content_type == "application/json":
                return [FileInfo.from_json(e) for e in (a.json() or {}).get("entries") or []]
            return a.read()

    def delete_file(self, id: str, path: str, *, request_timeout: float | None = None) -> None:
        """DELETE …/files: removes a file, or a folder with its contents."""
        with self._t.send(
            "DELETE", api_path("v1", "sessions", id, "files"), query=[("path", path)], timeout=self._timeout(request_timeout)
        ) as a:
            a.read()
