"""sbx.files: files in and out of a sandbox, as E2B's Sandbox.files.

Paths are inside the sandbox: a relative one is taken from /workspace, and
only /workspace and /tmp are served (anything else is InvalidArgument).
"""

from __future__ import annotations

import builtins
import posixpath
from typing import IO, TYPE_CHECKING

from .errors import NotFound
from .models import FileInfo, FileWritten

if TYPE_CHECKING:
    from .sandbox import Sandbox


class Files:
    """The files of its sandbox's session."""

    def __init__(self, sandbox: Sandbox) -> None:
        self._sbx = sandbox

    def write(self, path: str, data: bytes | str | IO[bytes]) -> FileWritten:
        """Writes a file (str as UTF-8; a binary file object is streamed),
        making its parent folders."""
        return self._sbx.client.put_file(self._sbx.id, path, data)

    def read(self, path: str) -> bytes:
        """A file's bytes."""
        got = self._sbx.client.get_file(self._sbx.id, path)
        if not isinstance(got, bytes):
            raise IsADirectoryError(f"{path} is a folder in session {self._sbx.id}: list it with files.list")
        return got

    def read_text(self, path: str, encoding: str = "utf-8") -> str:
        """A file's text."""
        return self.read(path).decode(encoding)

    def list(self, path: str = ".") -> builtins.list[FileInfo]:
        """The entries of a folder (default /workspace)."""
        got = self._sbx.client.get_file(self._sbx.id, path)
        if isinstance(got, bytes):
            raise NotADirectoryError(f"{path} is a file in session {self._sbx.id}: read it with files.read")
        return got

    def remove(self, path: str) -> None:
        """Removes a file, or a folder with its contents."""
        self._sbx.client.delete_file(self._sbx.id, path)

    def exists(self, path: str) -> bool:
        """Whether path exists, found in its folder's listing (a file is not
        downloaded to tell)."""
        norm = posixpath.normpath(posixpath.join("/workspace", path))
        if norm in ("/workspace", "/tmp"):
            return True
        parent, name = posixpath.split(norm)
        try:
            entries = self.list(parent)
        except (NotFound, NotADirectoryError):
            return False
        return any(e.name == name for e in entries)
