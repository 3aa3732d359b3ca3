"""Folders as tar streams, both ways (files.upload_dir, files.download_dir).

The daemon moves a folder as a tar stream whose entries are under the
folder's own name (cp -r): folders, regular files and symlinks, a symlink
as a link and never followed. Packing is tarfile's headers (TarInfo.tobuf,
PAX where a name needs it) around the files' bytes, made as the upload is
sent, so that a large folder is never held whole.

Unpacking is stricter than ``tarfile.extractall(filter="data")``, which it
does not use: that filter refuses a symlink that points outside the folder
(in a sandbox, a link to /workspace/... is ordinary, and it is kept as a
link), and it writes a file through a link that points inside. Here every
folder of an entry's path is opened with O_NOFOLLOW below the one before,
so nothing is written through a symlink, wherever it points; a file or a
link is made under a temporary name and renamed over what was at its name
(a symlink there is replaced, never followed); names that are absolute or
hold ".." are refused. Where the standard library has tarfile.data_filter
(3.12, and 3.8.17+ to 3.11.4+ as a backport) each file's and folder's
header goes through it too, for its checks and its modes; without it the
same modes are made here (no setuid or setgid bits, no group or other
write, the owner may read and write). Owners are never set.
"""

from __future__ import annotations

import errno
import itertools
import os
import stat
import tarfile
from typing import IO, Callable, Iterator

from .errors import ProtocolError

_BLOCK = tarfile.BLOCKSIZE
_CHUNK = 1 << 16

# Names of temporary files beside the one being written.
_seq = itertools.count(1)

_data_filter: Callable[[tarfile.TarInfo, str], tarfile.TarInfo] | None = getattr(tarfile, "data_filter", None)


class LocalError(Exception):
    """A failure to read the local folder while it was being sent: the
    upload's caller raises ``error`` itself, not the broken call it made."""

    def __init__(self, error: OSError) -> None:
        super().__init__(str(error))
        self.error = error


def pack_dir(local: str) -> Iterator[bytes]:
    """The local folder ``local`` as a tar stream, its entries under its
    own name; symlinks as links, anything else that is not a file or a
    folder (a device, a fifo, a socket) left out. A file that changes
    while it is read is cut or padded to the size its header said, so
    the stream stays whole. A folder that is not there raises its OSError
    at once, before anything is sent; a failure to read once the stream
    goes raises LocalError."""
    top = os.path.abspath(local)
    st = os.stat(top)
    if not stat.S_ISDIR(st.st_mode):
        raise NotADirectoryError(errno.ENOTDIR, "not a folder: upload a file with files.write", local)
    base = os.path.basename(top.rstrip(os.sep)) or "root"
    return _stream(top, base)


def _stream(top: str, base: str) -> Iterator[bytes]:
    yield from _pack(top, base)
    yield b"\0" * (2 * _BLOCK)


def _pack(path: str, name: str) -> Iterator[bytes]:
    try:
        st = os.lstat(path)
    except OSError as e:
        raise LocalError(e) from None
    info = tarfile.TarInfo(name)
    info.mode = stat.S_IMODE(st.st_mode)
    info.mtime = int(st.st_mtime)
    # The daemon makes everything the sandbox user's: local owners are
    # nobody's business there.
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    if stat.S_ISLNK(st.st_mode):
        info.type = tarfile.SYMTYPE
        try:
            info.linkname = os.readlink(path)
        except OSError as e:
            raise LocalError(e) from None
        yield _header(info)
    elif stat.S_ISDIR(st.st_mode):
        info.type = tarfile.DIRTYPE
        yield _header(info)
        try:
            names = sorted(os.listdir(path))
        except OSError as e:
            raise LocalError(e) from None
        for n in names:
            yield from _pack(os.path.join(path, n), f"{name}/{n}")
    elif stat.S_ISREG(st.st_mode):
        info.type = tarfile.REGTYPE
        info.size = st.st_size
        try:
            f = open(path, "rb")
        except OSError as e:
            raise LocalError(e) from None
        with f:
            yield _header(info)
            left = info.size
            while left > 0:
                try:
                    b = f.read(min(_CHUNK, left))
                except OSError as e:
                    raise LocalError(e) from None
                if not b:
                    break
                left -= len(b)
                yield b
            if left > 0:
                yield b"\0" * left
        if info.size % _BLOCK:
            yield b"\0" * (_BLOCK - info.size % _BLOCK)


def _header(info: tarfile.TarInfo) -> bytes:
    # PAX for names and link targets longer than ustar holds, or not
    # ASCII; surrogateescape keeps a name that is not UTF-8 as its bytes.
    return info.tobuf(tarfile.PAX_FORMAT, "utf-8", "surrogateescape")


class _Counting:
    """A binary stream that counts what was read from it, to tell a tar
    stream that ended from one that was cut (see extract_tar)."""

    def __init__(self, f: IO[bytes]) -> None:
        self._f = f
        self.count = 0

    def read(self, n: int = -1) -> bytes:
        b = self._f.read(n)
        self.count += len(b)
        return b


def extract_tar(stream: IO[bytes], dest: str) -> list[str]:
    """Unpacks the tar ``stream`` into the local folder ``dest`` (made as
    needed) and answers the paths it wrote, folders included. Nothing is
    written outside dest, by a name or through a symlink (see above). An
    entry whose name leaves dest, or a stream that ends before the tar's
    end, is ProtocolError; a file that cannot be written raises its
    OSError. Kinds other than folders, files and symlinks are skipped."""
    os.makedirs(dest, exist_ok=True)
    real = os.path.realpath(dest)
    root = os.open(dest, os.O_RDONLY | os.O_DIRECTORY)
    written: list[str] = []
    src = _Counting(stream)
    try:
        try:
            tf = tarfile.open(fileobj=src, mode="r|")  # type: ignore[call-overload]
        except tarfile.TarError as e:
            raise ProtocolError(f"sandboxd sent what is not a tar stream: {e}") from None
        with tf:
            try:
                for m in tf:
                    parts = _parts(m.name)
                    if not parts or not (m.isdir() or m.isreg() or m.issym()):
                        continue
                    parent = _open_dirs(root, parts[:-1])
                    try:
                        _extract(tf, m, parent, parts[-1], real, dest)
                    finally:
                        os.close(parent)
                    written.append(os.path.join(dest, *parts))
                end = getattr(tf, "offset", None)
            except tarfile.TarError as e:
                raise ProtocolError(f"the tar stream from sandboxd was cut or broken: {e}") from None
        # tarfile takes a stream that stops between two entries for one
        # that ended; a tar's end is a zero block at least, which a daemon
        # whose copy failed halfway never sends.
        while src.read(_CHUNK):
            pass
        if isinstance(end, int) and src.count - end < _BLOCK:
            raise ProtocolError(f"the tar stream from sandboxd stopped before its end: {dest} holds part of the folder")
    finally:
        os.close(root)
    return written


def _extract(tf: tarfile.TarFile, m: tarfile.TarInfo, parent: int, name: str, real: str, dest: str) -> None:
    """One folder, file or symlink, named name in the folder parent (opened
    below dest without following a symlink)."""
    info = m
    # The filter resolves the entry's path: a symlink at its very name
    # would be followed, where here it is replaced, so its verdict on
    # such an entry is not this one's.
    if _data_filter is not None and not m.issym() and not _is_link(parent, name):
        try:
            info = _data_filter(m, real)
        except tarfile.FilterError as e:
            raise ProtocolError(f"the tar entry {m.name!r} is refused: {e}") from None
    if m.isdir():
        os.close(_open_dirs(parent, [name], last_replaces=True))
    elif m.isreg():
        f = tf.extractfile(m)
        assert f is not None
        mode = info.mode if info is not m and info.mode is not None else _file_mode(m)
        _write_file(parent, name, f, mode, m.mtime, dest)
    else:
        _replace(parent, name, lambda tmp, d: os.symlink(m.linkname, tmp, dir_fd=d), dest)


def _is_link(parent: int, name: str) -> bool:
    try:
        return stat.S_ISLNK(os.stat(name, dir_fd=parent, follow_symlinks=False).st_mode)
    except FileNotFoundError:
        return False


def _parts(name: str) -> list[str]:
    """An entry's path as its components; none for the folder itself.
    Absolute names and ".." are refused: they would leave the folder."""
    if name.startswith("/") or name.startswith("\\"):
        raise ProtocolError(f"the tar entry {name!r} is absolute: refused, it would be written outside the folder")
    parts = [p for p in name.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise ProtocolError(f"the tar entry {name!r} holds '..': refused, it could be written outside the folder")
    if any("\0" in p for p in parts):
        raise ProtocolError(f"the tar entry {name!r} holds a NUL byte")
    return parts


_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW


def _open_dirs(root: int, parts: list[str], *, last_replaces: bool = False) -> int:
    """The folder root/parts..., each made as needed and opened below the
    one before without following a symlink. A symlink or a file where a
    folder must be is an error, but for the last of a folder's own entry
    (``last_replaces``): the tar says a folder is there, so it replaces it."""
    fd = os.dup(root)
    try:
        for i, p in enumerate(parts):
            try:
                nfd = os.open(p, _DIR_FLAGS, dir_fd=fd)
            except FileNotFoundError:
                try:
                    os.mkdir(p, 0o755, dir_fd=fd)
                except FileExistsError:
                    pass  # made meanwhile: opened below as any other
                nfd = os.open(p, _DIR_FLAGS, dir_fd=fd)
            except OSError as e:
                # ELOOP: a symlink (O_NOFOLLOW); ENOTDIR: a file.
                if e.errno not in (errno.ELOOP, errno.ENOTDIR):
                    raise
                if not (last_replaces and i == len(parts) - 1):
                    raise NotADirectoryError(
                        errno.ENOTDIR,
                        "not a folder (a symlink or a file): nothing is written through it, remove it first",
                        os.path.join(*parts[: i + 1]),
                    ) from None
                os.unlink(p, dir_fd=fd)
                os.mkdir(p, 0o755, dir_fd=fd)
                nfd = os.open(p, _DIR_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = nfd
        return fd
    except BaseException:
        os.close(fd)
        raise


def _replace(parent: int, name: str, make: Callable[[str, int], None], dest: str) -> None:
    """Makes an entry under a temporary name in parent, then renames it to
    name: what was there (a file, a symlink) is replaced as a whole, and a
    symlink there is never followed. A folder there stays, and is an error."""
    tmp = f".{name[:200]}.sandboxd-{os.getpid()}-{next(_seq)}"
    make(tmp, parent)
    try:
        os.rename(tmp, name, src_dir_fd=parent, dst_dir_fd=parent)
    except OSError as e:
        try:
            os.unlink(tmp, dir_fd=parent)
        except OSError:
            pass
        if e.errno in (errno.EISDIR, errno.ENOTEMPTY, errno.EEXIST):
            raise IsADirectoryError(errno.EISDIR, "a folder is where the copy has a file or a link: remove it first", os.path.join(dest, name)) from None
        raise


def _file_mode(m: tarfile.TarInfo) -> int:
    """The mode tarfile.data_filter gives a file: no setuid, setgid or
    sticky bit, no group or other write, executable only if the owner
    could, readable and writable by the owner."""
    mode = m.mode & 0o755
    if not mode & 0o100:
        mode &= ~0o111
    return mode | 0o600


def _write_file(parent: int, name: str, src: IO[bytes], mode: int, mtime: float, dest: str) -> None:
    def make(tmp: str, d: int) -> None:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600, dir_fd=d)
        try:
            with open(fd, "wb", closefd=False) as out:
                while True:
                    b = src.read(_CHUNK)
                    if not b:
                        break
                    out.write(b)
            os.fchmod(fd, mode)
            if mtime and os.utime in os.supports_fd:
                os.utime(fd, (mtime, mtime))
        except BaseException:
            os.close(fd)
            try:
                os.unlink(tmp, dir_fd=d)
            except OSError:
                pass
            raise
        os.close(fd)

    _replace(parent, name, make, dest)
