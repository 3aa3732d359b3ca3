"""File calls of the API: upload, download or list, delete; folders as tar streams.

Paths are paths inside the sandbox; a relative one is taken from
/workspace, and only /workspace and /tmp are served (400 otherwise).
"""

from __future__ import annotations

from typing import IO, Iterable, Mapping

from ._transport import Caller, api_path
from .models import FileInfo, FileWritten

META_HEADER_PREFIX = "X-Sandboxd-Meta-"
"""An upload's header per metadata key (api.MetaHeaderPrefix)."""

TAR_MIME = "application/x-tar"
"""The type of a folder sent as a tar stream (format=tar)."""


class FileCalls(Caller):
    """The files endpoints; mixed into Client."""

    def put_file(
        self,
        id: str,
        path: str,
        data: bytes | str | IO[bytes],
        *,
        metadata: Mapping[str, str] | None = None,
        request_timeout: float | None = None,
    ) -> FileWritten:
        """PUT …/files: writes a file (str as UTF-8; a binary file object is
        streamed), making its parent folders. It replaces an old file only
        once complete, and with it its metadata: the file has exactly the
        ``metadata`` given (keys lower case; stat and listings answer it)."""
        headers = {META_HEADER_PREFIX + str(k): str(v) for k, v in (metadata or {}).items()}
        with self._t.send(
            "PUT",
            api_path("v1", "sessions", id, "files"),
            query=[("path", path)],
            body=data,
            headers=headers or None,
            timeout=self._timeout(request_timeout),
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

    def put_tar(
        self, id: str, path: str, data: bytes | IO[bytes] | Iterable[bytes], *, request_timeout: float | None = None
    ) -> FileWritten:
        """PUT …/files?format=tar: unpacks a tar stream (bytes, a binary file
        object or an iterable of bytes, streamed) into the folder ``path``,
        made as needed: folders, files and symlinks (as links, never
        followed). An entry that would leave the folder (an absolute name,
        "..") refuses the whole upload (InvalidArgument), though what came
        before it may be written. Answers the folder, the files' total
        size and how many files it wrote."""
        with self._t.send(
            "PUT",
            api_path("v1", "sessions", id, "files"),
            query=[("path", path), ("format", "tar")],
            body=data,
            headers={"Content-Type": TAR_MIME},
            timeout=self._timeout(request_timeout),
        ) as a:
            return FileWritten.from_json(a.json())

    def get_tar(self, id: str, path: str, *, request_timeout: float | None = None) -> IO[bytes]:
        """GET …/files?format=tar: the folder ``path`` (or a file) as a tar
        stream, its contents under its own name, read as it comes. The
        caller closes it (``with``). A copy that fails once the stream has
        begun is a stream cut short, which tar readers tell by its missing
        end (files.download_dir raises ProtocolError)."""
        a = self._t.send(
            "GET",
            api_path("v1", "sessions", id, "files"),
            query=[("path", path), ("format", "tar")],
            timeout=self._timeout(request_timeout),
        )
        return a.stream()
