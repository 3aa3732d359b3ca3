package sandboxfs

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// Restore makes the workspace what it was at checkpoint id, and drops id
// and every later checkpoint. What the checkpoint does not hold is
// removed (fifos, sockets and devices too); missing folders are made;
// a file whose (ino, ctime, size) is not the checkpoint's is replaced by
// a copy of its blob, owned by FS.UID/GID with its mode and mtime; a
// symlink is made again if it differs. Every step is below a folder's
// descriptor and no symlink is followed: a folder the sandbox replaced
// by a symlink is removed as the symlink, never written through.
// Folders keep the mtime the restore gives them.
//
// A Restore cut short (ctx, an error) leaves the workspace part-way and
// every checkpoint kept: restoring again finishes it.
func (c *Checkpoints) Restore(ctx context.Context, id uint64) error {
	c.op.Lock()
	defer c.op.Unlock()
	c.mu.Lock()
	_, ok := c.refs[id]
	c.mu.Unlock()
	if !ok {
		return notFound(id)
	}
	m, err := c.load(id)
	if err != nil {
		return err
	}
	root, err := c.fs.rootDir(Workspace)
	if err != nil {
		return err
	}
	defer unix.Close(root)
	top, err := openBeneath(root, ".", unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return err
	}
	defer unix.Close(top)
	r := &restorer{c: c, ctx: ctx, children: map[string][]*entry{}}
	for i := range m.Entries {
		e := &m.Entries[i]
		d, _ := splitName(e.Path)
		r.children[d] = append(r.children[d], e)
	}
	if err := r.dir(top, ""); err != nil {
		return restoreFull(err)
	}
	// The files just written are the next Take's baseline, with their
	// new inodes: it does not copy them again.
	c.base = index(m)
	if err := c.drop(func(k uint64) bool { return k >= id }); err != nil {
		return err
	}
	return c.collect()
}

// restorer is one Restore's walk.
type restorer struct {
	c        *Checkpoints
	ctx      context.Context
	children map[string][]*entry // by the path of their folder
}

// dir makes the folder dirfd (rel in the workspace) hold what the
// checkpoint's folder held.
func (r *restorer) dir(dirfd int, rel string) error {
	want := map[string]*entry{}
	for _, e := range r.children[rel] {
		_, name := splitName(e.Path)
		want[name] = e
	}
	names, err := sortedNames(dirfd)
	if err != nil {
		return err
	}
	// First what must go: what the checkpoint lacks, and what is of
	// another type there (a symlink where a folder was goes as a link).
	for _, name := range names {
		if err := r.ctx.Err(); err != nil {
			return err
		}
		var st unix.Stat_t
		if err := unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			if err == unix.ENOENT {
				continue
			}
			return err
		}
		if e := want[name]; e == nil || e.Type != typeOf(st.Mode) {
			if err := removeAt(dirfd, name); err != nil {
				return fmt.Errorf("%s: %w", subPath(rel, name), err)
			}
		}
	}
	for _, e := range r.children[rel] {
		if err := r.ctx.Err(); err != nil {
			return err
		}
		_, name := splitName(e.Path)
		var err error
		switch e.Type {
		case typeDir:
			err = r.folder(dirfd, name, e)
		case typeSymlink:
			err = r.symlink(dirfd, name, e)
		case typeFile:
			err = r.file(dirfd, name, e)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", e.Path, err)
		}
	}
	return nil
}

// folder makes e's folder if missing, gives it e's mode and restores
// what it holds.
func (r *restorer) folder(dirfd int, name string, e *entry) error {
	err := unix.Mkdirat(dirfd, name, 0o700)
	made := err == nil
	if err != nil && err != unix.EEXIST {
		return err
	}
	// O_NOFOLLOW: a symlink swapped in since is an error, not a way out.
	fd, err := openBeneath(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	if made {
		if err := unix.Fchown(fd, r.c.fs.UID, r.c.fs.GID); err != nil {
			return err
		}
	}
	if err := r.dir(fd, e.Path); err != nil {
		return err
	}
	// After its contents: a folder without write permission is filled first.
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return err
	}
	if st.Mode&0o7777 != e.Mode {
		return unix.Fchmod(fd, e.Mode)
	}
	return nil
}

// symlink makes e's symlink unless it is there.
func (r *restorer) symlink(dirfd int, name string, e *entry) error {
	buf := make([]byte, unix.PathMax)
	if k, err := unix.Readlinkat(dirfd, name, buf); err == nil && string(buf[:k]) == e.Target {
		return nil
	}
	if err := unix.Unlinkat(dirfd, name, 0); err != nil && err != unix.ENOENT {
		return err
	}
	if err := unix.Symlinkat(e.Target, dirfd, name); err != nil {
		return err
	}
	return unix.Fchownat(dirfd, name, r.c.fs.UID, r.c.fs.GID, unix.AT_SYMLINK_NOFOLLOW)
}

// file puts e's blob at name unless the file there is e's, and records
// the new file's identity in e.
func (r *restorer) file(dirfd int, name string, e *entry) error {
	var st unix.Stat_t
	if err := unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err == nil &&
		st.Mode&unix.S_IFMT == unix.S_IFREG && st.Ino == e.Ino && ctimeNs(&st) == e.Ctime && st.Size == e.Size {
		if !e.Racy {
			return nil
		}
		// Compared, not rewritten: a rewrite would make it racy again.
		if same, err := r.unchanged(dirfd, name, e); err != nil || same {
			return err
		}
	}
	tmp := fmt.Sprintf(".%s.restore-%d", name, uploadSeq.Add(1))
	if len(tmp) > 255 {
		tmp = fmt.Sprintf(".restore-%d", uploadSeq.Add(1))
	}
	start := time.Now()
	fd, err := openBeneath(dirfd, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW, 0o600)
	if err != nil {
		return err
	}
	f := os.NewFile(uintptr(fd), e.Path)
	defer f.Close()
	done := false
	defer func() {
		if !done {
			_ = unix.Unlinkat(dirfd, tmp, 0)
		}
	}()
	// Owner first: a chown clears set-id bits the chmod then sets.
	if err := unix.Fchown(fd, r.c.fs.UID, r.c.fs.GID); err != nil {
		return err
	}
	var n int64
	if e.Blob != 0 {
		blob, err := os.Open(r.c.blobPath(e.Blob))
		if err != nil {
			return err
		}
		n, err = io.Copy(f, blob)
		blob.Close()
		if err != nil {
			return err
		}
	}
	if err := unix.Fchmod(fd, e.Mode); err != nil {
		return err
	}
	// The file itself through its descriptor's /proc link: never a name
	// the sandbox could swap.
	ts := []unix.Timespec{{Nsec: unix.UTIME_OMIT}, unix.NsecToTimespec(e.Mtime)}
	if err := unix.UtimesNanoAt(unix.AT_FDCWD, "/proc/self/fd/"+strconv.Itoa(fd), ts, 0); err != nil {
		return err
	}
	if err := unix.Renameat(dirfd, tmp, dirfd, name); err != nil {
		return err
	}
	done = true
	if err := unix.Fstat(fd, &st); err != nil {
		return err
	}
	e.Ino, e.Ctime, e.Size = st.Ino, ctimeNs(&st), n
	e.Racy = e.Ctime >= start.Add(-racyWindow).UnixNano()
	return nil
}

// unchanged reports whether the file name, racy in the checkpoint,
// still holds e's blob, and if so whether it is still racy.
func (r *restorer) unchanged(dirfd int, name string, e *entry) (bool, error) {
	if e.Size == 0 {
		return true, nil
	}
	fd, err := openBeneath(dirfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0)
	if err != nil {
		return false, nil // replaced since: rewritten
	}
	f := os.NewFile(uintptr(fd), e.Path)
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return false, err
	}
	start := time.Now()
	if st.Mode&unix.S_IFMT != unix.S_IFREG || st.Ino != e.Ino || ctimeNs(&st) != e.Ctime || st.Size != e.Size {
		return false, nil
	}
	same, err := r.c.sameContent(f, e.Blob)
	if same {
		e.Racy = e.Ctime >= start.Add(-racyWindow).UnixNano()
	}
	return same, err
}

// removeAt removes name in dirfd: a file, a symlink (not its target) or
// a whole folder.
func removeAt(dirfd int, name string) error {
	err := unix.Unlinkat(dirfd, name, 0)
	if err == unix.EISDIR {
		// As Remove: RemoveAll goes below the parent's fd with *at calls
		// and never follows a symlink.
		err = os.RemoveAll(fmt.Sprintf("/proc/self/fd/%d/%s", dirfd, name))
	}
	if err == unix.ENOENT {
		return nil
	}
	return err
}

// typeOf is a manifest's type for a stat mode ("" for what it skips).
func typeOf(mode uint32) string {
	switch mode & unix.S_IFMT {
	case unix.S_IFDIR:
		return typeDir
	case unix.S_IFREG:
		return typeFile
	case unix.S_IFLNK:
		return typeSymlink
	}
	return ""
}
