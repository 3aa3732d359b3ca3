package sandboxfs

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/containerd/errdefs"
	"golang.org/x/sys/unix"

	"github.com/sandboxd/sandboxd/api"
)

// FS is one sandbox's served folders, as host paths.
type FS struct {
	Workspace string
	Tmp       string
	// UID and GID own what the API writes, so sandboxed code can change it.
	UID, GID int
	// Names gives a file's owner and group as the sandbox names them (nil:
	// the numbers).
	Names func(uid, gid uint32) (user, group string)
	// Done is closed when the session's sandbox ends: a watch ends with
	// it. Nil while the session does not run.
	Done <-chan struct{}
}

const resolve = unix.RESOLVE_BENEATH | unix.RESOLVE_NO_MAGICLINKS

func (f *FS) rootDir(r Root) (int, error) {
	dir := f.Workspace
	if r == Tmp {
		dir = f.Tmp
	}
	if dir == "" {
		return -1, api.Errorf(errdefs.ErrConflict, "%s exists only while the session runs: start it first", r)
	}
	return unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
}

// openBeneath opens rel below the directory fd dirfd.
func openBeneath(dirfd int, rel string, flags int, mode uint32) (int, error) {
	if rel == "" {
		rel = "."
	}
	for {
		fd, err := unix.Openat2(dirfd, rel, &unix.OpenHow{Flags: uint64(flags | unix.O_CLOEXEC), Mode: uint64(mode), Resolve: resolve})
		if err == unix.EINTR || err == unix.EAGAIN {
			continue
		}
		return fd, err
	}
}

// classify turns a resolution error into the API's error classes.
func classify(root Root, rel string, err error) error {
	p := root.String()
	if rel != "" || root == Volume {
		p += "/" + rel
	}
	switch {
	case errors.Is(err, unix.ENOENT):
		return api.Errorf(errdefs.ErrNotFound, "no such file or folder: %s", p)
	case errors.Is(err, unix.EXDEV):
		return api.Errorf(errdefs.ErrInvalidArgument, "bad path %s: it goes through a symlink that leaves %s", p, root)
	case errors.Is(err, unix.ELOOP):
		// A loop, or a symlink where it must not be followed.
		return api.Errorf(errdefs.ErrInvalidArgument, "bad path %s: it goes through a symlink loop or a symlink that leaves %s", p, root)
	case errors.Is(err, unix.EEXIST), errors.Is(err, unix.ENOTEMPTY):
		return api.Errorf(errdefs.ErrInvalidArgument, "%s is in the way: it exists (a folder is not replaced)", p)
	case errors.Is(err, unix.ENOTDIR):
		return api.Errorf(errdefs.ErrInvalidArgument, "bad path %s: a part of it is not a folder", p)
	case errors.Is(err, unix.EISDIR):
		return api.Errorf(errdefs.ErrInvalidArgument, "%s is a folder", p)
	case errors.Is(err, unix.ENAMETOOLONG):
		return api.Errorf(errdefs.ErrInvalidArgument, "bad path %s: a name is too long", p)
	case errors.Is(err, unix.ENOSPC), errors.Is(err, unix.EDQUOT):
		if root == Volume {
			return api.Errorf(errdefs.ErrResourceExhausted, "no space left for %s: the volume is full (its size_mb)", p)
		}
		return api.Errorf(errdefs.ErrResourceExhausted, "no space left for %s: the session's disk quota is used up", p)
	case errors.Is(err, unix.EROFS):
		// ext4 remounts itself read-only after an I/O error under it.
		return api.Errorf(errdefs.ErrConflict, "cannot write %s: the session's disk is read-only after an error; read what you need and recreate the session", p)
	}
	return fmt.Errorf("%s: %w", p, err)
}

// OpenOrList opens a file for reading, or lists a folder.
func (f *FS) OpenOrList(r Root, rel string) (*os.File, *api.FileList, error) {
	file, err := f.Open(r, rel)
	if err != nil {
		return nil, nil, err
	}
	fi, err := file.Stat()
	if err != nil {
		file.Close()
		return nil, nil, err
	}
	if !fi.IsDir() {
		return file, nil, nil
	}
	defer file.Close()
	list, err := List(file)
	return nil, list, err
}

// Open opens a file or folder for reading.
func (f *FS) Open(r Root, rel string) (*os.File, error) {
	root, err := f.rootDir(r)
	if err != nil {
		return nil, err
	}
	defer unix.Close(root)
	fd, err := openBeneath(root, rel, unix.O_RDONLY|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, classify(r, rel, err)
	}
	file := os.NewFile(uintptr(fd), r.String()+"/"+rel)
	fi, err := file.Stat()
	if err != nil {
		file.Close()
		return nil, err
	}
	if !fi.Mode().IsRegular() && !fi.IsDir() {
		file.Close()
		return nil, api.Errorf(errdefs.ErrInvalidArgument, "%s/%s is not a regular file or folder", r, rel)
	}
	return file, nil
}

// List lists a folder opened with Open. Entries are not followed.
func List(dir *os.File) (*api.FileList, error) {
	names, err := dir.Readdirnames(-1)
	if err != nil {
		return nil, err
	}
	out := &api.FileList{Entries: []api.FileInfo{}}
	for _, n := range names {
		var st unix.Stat_t
		if err := unix.Fstatat(int(dir.Fd()), n, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			continue // gone since the listing
		}
		typ := "other"
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFREG:
			typ = "file"
		case unix.S_IFDIR:
			typ = "dir"
		case unix.S_IFLNK:
			typ = "symlink"
		}
		out.Entries = append(out.Entries, api.FileInfo{
			Name:        n,
			Type:        typ,
			Size:        st.Size,
			Mode:        "0" + strconv.FormatUint(uint64(st.Mode&0o7777), 8),
			Permissions: permissions(st.Mode),
			ModifiedAt:  time.Unix(st.Mtim.Sec, st.Mtim.Nsec).UTC(),
			Metadata:    metaOf(int(dir.Fd()), n, st.Mode),
		})
	}
	return out, nil
}

// mkdirAll makes every folder of rel below root and returns an fd of the
// last one. Each step is resolved beneath the previous, so a symlink cannot
// divert it.
func (f *FS) mkdirAll(root int, rel string) (int, error) {
	fd, err := unix.Dup(root)
	if err != nil {
		return -1, err
	}
	if rel == "" {
		return fd, nil
	}
	for _, c := range strings.Split(rel, "/") {
		err := unix.Mkdirat(fd, c, 0o755)
		made := err == nil
		if err != nil && err != unix.EEXIST {
			unix.Close(fd)
			return -1, err
		}
		next, err := openBeneath(fd, c, unix.O_PATH|unix.O_DIRECTORY, 0)
		unix.Close(fd)
		if err != nil {
			return -1, err
		}
		if made {
			_ = unix.Fchownat(next, "", f.UID, f.GID, unix.AT_EMPTY_PATH)
		}
		fd = next
	}
	return fd, nil
}

// Write creates or replaces a file with what r holds, making parent
// folders as needed. It reads at most limit bytes: more is an error.
func (f *FS) Write(r Root, rel string, src io.Reader, limit int64) (int64, error) {
	return f.WriteMeta(r, rel, src, limit, nil)
}

// WriteMeta is Write, the new file given user metadata (CheckMeta'd):
// it replaces the old file whole, metadata and all.
func (f *FS) WriteMeta(r Root, rel string, src io.Reader, limit int64, meta map[string]string) (int64, error) {
	if err := CheckMeta(meta); err != nil {
		return 0, err
	}
	if rel == "" {
		return 0, api.Errorf(errdefs.ErrInvalidArgument, "%s is a folder: give a file path", r)
	}
	dir, name, err := f.parent(r, rel, true)
	if err != nil {
		return 0, err
	}
	defer unix.Close(dir)
	// A symlink at the final name is refused, not written through or over.
	var st unix.Stat_t
	if err := unix.Fstatat(dir, name, &st, unix.AT_SYMLINK_NOFOLLOW); err == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK {
		return 0, classify(r, rel, unix.ELOOP)
	}
	// The upload goes to a new file that replaces the old one only when
	// complete: a failed or refused upload (quota, size) loses nothing.
	// The new file has no name while it fills (O_TMPFILE), so a daemon
	// killed meanwhile leaves nothing in the user's folder; it gets a
	// hidden name only for the instant between link and rename.
	seq := uploadSeq.Add(1)
	tmp := fmt.Sprintf(".%s.upload-%d", name, seq)
	if len(tmp) > 255 {
		tmp = fmt.Sprintf(".upload-%d", seq)
	}
	fd, named, err := createUpload(dir, tmp)
	if err != nil {
		return 0, classify(r, rel, err)
	}
	file := os.NewFile(uintptr(fd), rel)
	defer file.Close()
	done := false
	defer func() {
		if !done && named {
			_ = unix.Unlinkat(dir, tmp, 0)
		}
	}()
	if err := file.Chown(f.UID, f.GID); err != nil {
		return 0, err
	}
	n, err := io.Copy(file, io.LimitReader(src, limit+1))
	// The reader stops at limit+1 bytes, so a body over the limit (the
	// server's own cap is limit+1 too) shows as n > limit.
	if err != nil {
		return n, classify(r, rel, err)
	}
	if n > limit {
		return n, api.ErrPayloadTooLarge.WithMessage(fmt.Sprintf("the upload is larger than the limit of %d bytes", limit))
	}
	// Set before the file takes its name: a reader never sees it
	// without its metadata.
	if err := setMeta(fd, meta); err != nil {
		return n, err
	}
	if !named {
		if err := unix.Linkat(fd, "", dir, tmp, unix.AT_EMPTY_PATH); err != nil {
			return n, classify(r, rel, err)
		}
		named = true
	}
	if err := unix.Renameat(dir, tmp, dir, name); err != nil {
		return n, classify(r, rel, err)
	}
	done = true
	return n, nil
}

// createUpload makes the file an upload fills, in dir: unnamed
// (O_TMPFILE) where the filesystem can, else named tmp (named true).
func createUpload(dir int, tmp string) (fd int, named bool, err error) {
	fd, err = unix.Openat(dir, ".", unix.O_WRONLY|unix.O_TMPFILE|unix.O_CLOEXEC, 0o644)
	switch {
	case err == nil:
		return fd, false, nil
	case errors.Is(err, unix.EOPNOTSUPP), errors.Is(err, unix.EISDIR):
		fd, err = openBeneath(dir, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW, 0o644)
		return fd, err == nil, err
	}
	return -1, false, err
}

// uploadSeq names uploads in progress apart.
var uploadSeq atomic.Uint64

// splitName is rel's folder and last name.
func splitName(rel string) (dirRel, name string) {
	if i := strings.LastIndexByte(rel, '/'); i >= 0 {
		return rel[:i], rel[i+1:]
	}
	return "", rel
}

// parent opens the folder above rel in root r (made, with make, as the
// sandbox's user's) and says rel's last name there. The caller closes dir.
func (f *FS) parent(r Root, rel string, make bool) (dir int, name string, err error) {
	root, err := f.rootDir(r)
	if err != nil {
		return -1, "", err
	}
	defer unix.Close(root)
	dirRel, name := splitName(rel)
	if make {
		dir, err = f.mkdirAll(root, dirRel)
	} else {
		dir, err = openBeneath(root, dirRel, unix.O_PATH|unix.O_DIRECTORY, 0)
	}
	if err != nil {
		return -1, "", classify(r, dirRel, err)
	}
	return dir, name, nil
}

// Remove deletes a file, a symlink (not its target) or a whole folder.
func (f *FS) Remove(r Root, rel string) error {
	if rel == "" {
		return api.Errorf(errdefs.ErrInvalidArgument, "%s itself cannot be removed", r)
	}
	dir, name, err := f.parent(r, rel, false)
	if err != nil {
		return err
	}
	defer unix.Close(dir)
	err = unix.Unlinkat(dir, name, 0)
	if err == unix.EISDIR {
		// RemoveAll works below the parent's fd with *at calls and never
		// follows a symlink, so the magic link is the only one resolved.
		err = os.RemoveAll(fmt.Sprintf("/proc/self/fd/%d/%s", dir, name))
	}
	if err != nil {
		return classify(r, rel, err)
	}
	return nil
}

// Create makes a new file for appending, and the folders above it, owned
// by the sandbox's user: what a process's output goes to. A file or a
// symlink already at rel is refused.
func (f *FS) Create(r Root, rel string) (*os.File, error) {
	dir, name, err := f.parent(r, rel, true)
	if err != nil {
		return nil, err
	}
	defer unix.Close(dir)
	fd, err := openBeneath(dir, name, unix.O_WRONLY|unix.O_APPEND|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW, 0o644)
	if err != nil {
		return nil, classify(r, rel, err)
	}
	file := os.NewFile(uintptr(fd), rel)
	if err := file.Chown(f.UID, f.GID); err != nil {
		file.Close()
		return nil, err
	}
	return file, nil
}

// Rename renames a file within its folder (to, a name).
func (f *FS) Rename(r Root, rel, to string) error {
	if strings.ContainsRune(to, '/') || to == "" || to == "." || to == ".." {
		return api.Errorf(errdefs.ErrInvalidArgument, "bad name %s", api.Quote(to))
	}
	dir, name, err := f.parent(r, rel, false)
	if err != nil {
		return err
	}
	defer unix.Close(dir)
	return unix.Renameat(dir, name, dir, to)
}
