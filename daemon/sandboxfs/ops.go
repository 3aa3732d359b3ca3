package sandboxfs

import (
	"io/fs"
	"strconv"
	"time"

	"github.com/containerd/errdefs"
	"golang.org/x/sys/unix"

	"github.com/sandboxd/sandboxd/api"
)

// join is rel's whole path in the sandbox.
func join(r Root, rel string) string {
	if rel == "" {
		return r.String()
	}
	return r.String() + "/" + rel
}

// fileType is the API's type of a stat's mode.
func fileType(mode uint32) string {
	switch mode & unix.S_IFMT {
	case unix.S_IFREG:
		return "file"
	case unix.S_IFDIR:
		return "dir"
	case unix.S_IFLNK:
		return "symlink"
	}
	return "other"
}

// octal is a mode's permission bits as the API writes them ("0644").
func octal(mode uint32) string { return "0" + strconv.FormatUint(uint64(mode&0o7777), 8) }

// permissions is ls's string of a mode ("-rw-r--r--", "drwxr-xr-x").
func permissions(mode uint32) string {
	m := fs.FileMode(mode & 0o777)
	switch mode & unix.S_IFMT {
	case unix.S_IFDIR:
		m |= fs.ModeDir
	case unix.S_IFLNK:
		m |= fs.ModeSymlink
	case unix.S_IFIFO:
		m |= fs.ModeNamedPipe
	case unix.S_IFSOCK:
		m |= fs.ModeSocket
	case unix.S_IFCHR:
		m |= fs.ModeDevice | fs.ModeCharDevice
	case unix.S_IFBLK:
		m |= fs.ModeDevice
	}
	if mode&unix.S_ISUID != 0 {
		m |= fs.ModeSetuid
	}
	if mode&unix.S_ISGID != 0 {
		m |= fs.ModeSetgid
	}
	if mode&unix.S_ISVTX != 0 {
		m |= fs.ModeSticky
	}
	s := m.String()
	// Go writes its own letters for the type ("L", "D", "p"...); ls's is
	// one of d, l, p, s, c, b or -, then the nine permission bits.
	lead := "-"
	switch mode & unix.S_IFMT {
	case unix.S_IFDIR:
		lead = "d"
	case unix.S_IFLNK:
		lead = "l"
	case unix.S_IFIFO:
		lead = "p"
	case unix.S_IFSOCK:
		lead = "s"
	case unix.S_IFCHR:
		lead = "c"
	case unix.S_IFBLK:
		lead = "b"
	}
	return lead + s[len(s)-9:]
}

// names is the owner and group of a file as the sandbox names them.
func (f *FS) names(uid, gid uint32) (string, string) {
	if f.Names != nil {
		return f.Names(uid, gid)
	}
	return strconv.FormatUint(uint64(uid), 10), strconv.FormatUint(uint64(gid), 10)
}

// stat describes name in the folder dir (name "" is dir itself), not
// following a symlink.
func (f *FS) stat(dir int, name string, r Root, rel string) (*api.FileStat, error) {
	var st unix.Stat_t
	var err error
	if name == "" {
		err = unix.Fstatat(dir, "", &st, unix.AT_EMPTY_PATH)
	} else {
		err = unix.Fstatat(dir, name, &st, unix.AT_SYMLINK_NOFOLLOW)
	}
	if err != nil {
		return nil, classify(r, rel, err)
	}
	owner, group := f.names(st.Uid, st.Gid)
	out := &api.FileStat{
		Name:        name,
		Path:        join(r, rel),
		Type:        fileType(st.Mode),
		Size:        st.Size,
		Mode:        octal(st.Mode),
		Permissions: permissions(st.Mode),
		Owner:       owner,
		Group:       group,
		ModifiedAt:  time.Unix(st.Mtim.Sec, st.Mtim.Nsec).UTC(),
		Metadata:    metaOf(dir, name, st.Mode),
	}
	if name == "" {
		out.Name = r.String()[1:]
	}
	if out.Type == "symlink" {
		buf := make([]byte, MaxPath)
		if n, err := unix.Readlinkat(dir, name, buf); err == nil {
			out.SymlinkTarget = string(buf[:n])
		}
	}
	return out, nil
}

// Stat describes a file, folder or symlink (not followed) of the session.
func (f *FS) Stat(r Root, rel string) (*api.FileStat, error) {
	if rel == "" {
		root, err := f.rootDir(r)
		if err != nil {
			return nil, err
		}
		defer unix.Close(root)
		return f.stat(root, "", r, rel)
	}
	dir, name, err := f.parent(r, rel, false)
	if err != nil {
		return nil, err
	}
	defer unix.Close(dir)
	return f.stat(dir, name, r, rel)
}

// Mkdir makes a folder and the folders above it, owned by the sandbox's
// user, and says whether it made the last one (false: it was there).
func (f *FS) Mkdir(r Root, rel string) (*api.FolderMade, error) {
	root, err := f.rootDir(r)
	if err != nil {
		return nil, err
	}
	defer unix.Close(root)
	existed := false
	if rel != "" {
		var st unix.Stat_t
		if fd, err := openBeneath(root, rel, unix.O_PATH|unix.O_NOFOLLOW, 0); err == nil {
			err = unix.Fstat(fd, &st)
			unix.Close(fd)
			if err == nil && st.Mode&unix.S_IFMT != unix.S_IFDIR {
				return nil, api.Errorf(errdefs.ErrConflict, "%s exists and is not a folder", join(r, rel))
			}
			existed = err == nil
		}
	}
	dir, err := f.mkdirAll(root, rel)
	if err != nil {
		return nil, classify(r, rel, err)
	}
	defer unix.Close(dir)
	st, err := f.stat(dir, "", r, rel)
	if err != nil {
		return nil, err
	}
	if rel != "" {
		_, st.Name = splitName(rel)
	}
	return &api.FolderMade{FileStat: *st, Created: rel != "" && !existed}, nil
}

// Move renames a file, folder or symlink within its root (/workspace or
// /tmp). It never replaces what is at the new path (conflict), and the
// new path's folder must exist.
func (f *FS) Move(r Root, rel string, toRoot Root, to string) (*api.FileStat, error) {
	if r != toRoot {
		return nil, api.Errorf(errdefs.ErrInvalidArgument, "cannot move %s to %s: a move stays within /workspace or within /tmp", join(r, rel), join(toRoot, to))
	}
	if rel == "" || to == "" {
		return nil, api.Errorf(errdefs.ErrInvalidArgument, "%s itself cannot be moved, nor replaced", r)
	}
	from, fromName, err := f.parent(r, rel, false)
	if err != nil {
		return nil, err
	}
	defer unix.Close(from)
	dst, dstName, err := f.parent(r, to, false)
	if err != nil {
		return nil, err
	}
	defer unix.Close(dst)
	err = unix.Renameat2(from, fromName, dst, dstName, unix.RENAME_NOREPLACE)
	switch err {
	case nil:
	case unix.EEXIST:
		return nil, api.Errorf(errdefs.ErrConflict, "cannot move %s: %s exists (a move never replaces)", join(r, rel), join(r, to))
	case unix.EINVAL:
		return nil, api.Errorf(errdefs.ErrInvalidArgument, "cannot move %s into itself (%s)", join(r, rel), join(r, to))
	default:
		return nil, classify(r, rel, err)
	}
	return f.stat(dst, dstName, r, to)
}
