"""sbx.files: files in and out of a sandbox, as E2B's Sandbox.files.

Paths are inside the sandbox: a relative one is taken from /workspace, and
only /workspace and /tmp are served (anything else is InvalidArgument).
Folders travel as tar streams, as ``sandboxctl cp -r`` sends them.
"""

from __future__ import annotations

import builtins
import posixpath
from typing import IO, TYPE_CHECKING, Iterator, Mapping

from ._tar import LocalError, extract_tar, pack_dir
from .errors import NotFound
from .models import FileEvent, FileInfo, FileStat, FileWritten

if TYPE_CHECKING:
    from .sandbox import Sandbox


class Files:
    """The files of its sandbox's session."""

    def __init__(self, sandbox: Sandbox) -> None:
        self._sbx = sandbox

    def write(self, path: str, data: bytes | str | IO[bytes], *, metadata: Mapping[str, str] | None = None) -> FileWritten:
        """Writes a file (str as UTF-8; a binary file object is streamed),
        making its parent folders; ``metadata`` (lower-case keys) is its
        user metadata, which stat and list answer."""
        return self._sbx.client.put_file(self._sbx.id, path, data, metadata=metadata)

    def read(self, path: str) -> bytes:
        """A file's bytes."""
        got = self._sbx.client.get_file(self._sbx.id, path)
        if not isinstance(got, bytes):
            raise IsADirectoryError(f"{path} is a folder in session {self._sbx.id}: list it with files.list")
        return got

    def read_text(self, path: str, encoding: str = "utf-8") -> str:
        """A file's text."""
        return self.read(path).decode(encoding)

    def list(self, path: str = ".", depth: int = 1) -> builtins.list[FileInfo]:
        """The entries of a folder (default /workspace); with ``depth`` > 1,
        those of the folders in it too, to that many levels, each with its
        whole ``path`` (at most 16 levels and 10000 entries)."""
        if depth != 1:
            return self._sbx.client.list_folder(self._sbx.id, path, depth)
        got = self._sbx.client.get_file(self._sbx.id, path)
        if isinstance(got, bytes):
            raise NotADirectoryError(f"{path} is a file in session {self._sbx.id}: read it with files.read")
        return got

    def stat(self, path: str) -> FileStat:
        """A file, folder or symlink (never followed): type, size, mode,
        permissions, owner and group as the sandbox names them, mtime."""
        return self._sbx.client.stat_file(self._sbx.id, path)

    def mkdir(self, path: str) -> FileStat:
        """Makes a folder and those above it (mkdir -p); ``created`` says
        whether it was new."""
        return self._sbx.client.make_folder(self._sbx.id, path)

    def move(self, src: str, dst: str) -> FileStat:
        """Renames a file or folder within /workspace or within /tmp; never
        replaces (Conflict if ``dst`` exists). Answers ``dst``'s stat."""
        return self._sbx.client.move_file(self._sbx.id, src, dst)

    def watch(self, path: str = ".", *, recursive: bool = False) -> Iterator[FileEvent]:
        """The changes in a folder as they happen, an iterator: it ends when
        the session's sandbox or the folder goes; ``close()`` it to stop."""
        return self._sbx.client.watch_files(self._sbx.id, path, recursive=recursive)

    def remove(self, path: str) -> None:
        """Removes a file, or a folder with its contents."""
        self._sbx.client.delete_file(self._sbx.id, path)

    def upload_dir(self, local: str, remote: str = ".") -> FileWritten:
        """Copies the local folder ``local`` into the sandbox's folder
        ``remote`` as cp -r does: it lands as remote/NAME (NAME is local's
        own name; remote is made as needed), with its folders, files and
        symlinks (as links, never followed; devices, fifos and sockets are
        left out). It streams: the folder is never held whole. Answers the
        folder it landed in, the files' total size and their number
        (``files``). A local file that cannot be read raises its OSError;
        what was sent before it stays in the sandbox."""
        failed: list[OSError] = []
        packed = pack_dir(local)

        def chunks() -> Iterator[bytes]:
            try:
                yield from packed
            except LocalError as e:
                # Raised inside the upload, it would be taken for the
                # daemon's failure: the caller gets the local error itself.
                failed.append(e.error)
                raise

        try:
            return self._sbx.client.put_tar(self._sbx.id, remote, chunks())
        except Exception:
            if failed:
                raise failed[0] from None
            raise

    def download_dir(self, remote: str, local: str = ".") -> builtins.list[str]:
        """Copies the sandbox's folder ``remote`` (or a file) into the local
        folder ``local`` (made as needed) as cp -r does: it lands as
        local/NAME. Answers the local paths it wrote. Nothing is written
        outside ``local``: an entry named outside it is refused
        (ProtocolError), nothing is written through a symlink (one where a
        folder must be is NotADirectoryError), and symlinks are made as
        links, wherever they point. What was at a name is replaced; a
        folder merges. A copy cut short (the folder changed as it was read)
        is ProtocolError, with part of it written."""
        with self._sbx.client.get_tar(self._sbx.id, remote) as stream:
            return extract_tar(stream, local)

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
