package sandboxfs

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/containerd/errdefs"
	"golang.org/x/sys/unix"

	"github.com/sandboxd/sandboxd/api"
)

// Take makes the workspace as it is now checkpoint id (greater than
// every kept one). Files unchanged since the newest checkpoint (or the
// last Restore) share its blobs; the others are copied. The walk goes
// below descriptors and never follows a symlink; fifos, sockets and
// devices are left out and counted (Skipped).
func (c *Checkpoints) Take(ctx context.Context, id uint64) error {
	c.op.Lock()
	defer c.op.Unlock()
	if ids := c.IDs(); len(ids) > 0 && id <= ids[len(ids)-1] {
		return api.Errorf(errdefs.ErrInvalidArgument, "checkpoint %d is not newer than checkpoint %d", id, ids[len(ids)-1])
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
	t := &taker{c: c, ctx: ctx, m: &manifest{Version: manifestVersion, ID: id}}
	err = t.walk(top, "")
	if err == nil {
		err = c.save(t.m)
	}
	if err != nil {
		for _, b := range t.made {
			_ = os.Remove(c.blobPath(b))
		}
		return diskFull(err)
	}
	c.add(t.m)
	c.base = index(t.m)
	return nil
}

// taker is one Take's walk.
type taker struct {
	c    *Checkpoints
	ctx  context.Context
	m    *manifest
	made []uint64 // blobs made by this Take, removed if it fails
}

// walk adds what the folder dirfd (rel in the workspace) holds.
func (t *taker) walk(dirfd int, rel string) error {
	names, err := sortedNames(dirfd)
	if err != nil {
		return err
	}
	for _, name := range names {
		if err := t.ctx.Err(); err != nil {
			return err
		}
		if len(t.m.Entries) >= maxTarEntries {
			return api.Errorf(errdefs.ErrResourceExhausted, "cannot checkpoint /workspace: it holds more than %d entries", maxTarEntries)
		}
		p := subPath(rel, name)
		var st unix.Stat_t
		if err := unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			if err == unix.ENOENT {
				continue // gone since the listing
			}
			return fmt.Errorf("%s: %w", p, err)
		}
		e := entry{Path: p, Mode: st.Mode & 0o7777, Mtime: mtimeNs(&st), Ino: st.Ino, Ctime: ctimeNs(&st), Size: st.Size}
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFDIR:
			e.Type, e.Size = typeDir, 0
			fd, err := openBeneath(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW, 0)
			if err == unix.ENOENT || err == unix.ELOOP || err == unix.ENOTDIR {
				continue // replaced since: this walk does not see it
			}
			if err != nil {
				return fmt.Errorf("%s: %w", p, err)
			}
			t.m.Entries = append(t.m.Entries, e)
			err = t.walk(fd, p)
			unix.Close(fd)
			if err != nil {
				return err
			}
		case unix.S_IFLNK:
			buf := make([]byte, unix.PathMax)
			k, err := unix.Readlinkat(dirfd, name, buf)
			if err != nil {
				return fmt.Errorf("%s: %w", p, err)
			}
			e.Type, e.Target = typeSymlink, string(buf[:k])
			t.m.Entries = append(t.m.Entries, e)
		case unix.S_IFREG:
			e.Type = typeFile
			ok, err := t.file(dirfd, name, &e)
			if err != nil {
				return fmt.Errorf("%s: %w", p, err)
			}
			if ok {
				t.m.Entries = append(t.m.Entries, e)
			}
		default:
			t.m.Skipped++
		}
	}
	return nil
}

// file fills e's blob: the baseline's if the file is unchanged, else a
// new copy. False: the file is no longer a file (skipped).
func (t *taker) file(dirfd int, name string, e *entry) (bool, error) {
	old := t.c.base[e.Path]
	same := old != nil && old.Type == typeFile && old.Ino == e.Ino && old.Ctime == e.Ctime && old.Size == e.Size
	if same && !old.Racy {
		e.Blob = old.Blob
		return true, nil
	}
	if e.Size == 0 {
		return true, nil // an empty file needs no blob
	}
	fd, err := openBeneath(dirfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0)
	if err == unix.ENOENT || err == unix.ELOOP {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	f := os.NewFile(uintptr(fd), e.Path)
	defer f.Close()
	// What is recorded is the opened file's, read before its bytes: a
	// change while they are copied moves its ctime past the recorded one.
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return false, err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return false, nil
	}
	start := time.Now()
	e.Mode, e.Mtime, e.Ino, e.Ctime, e.Size = st.Mode&0o7777, mtimeNs(&st), st.Ino, ctimeNs(&st), st.Size
	e.Racy = e.Ctime >= start.Add(-racyWindow).UnixNano()
	if same && old.Ino == e.Ino && old.Ctime == e.Ctime && old.Size == e.Size {
		eq, err := t.c.sameContent(f, old.Blob)
		if err != nil {
			return false, err
		}
		if eq {
			e.Blob = old.Blob
			return true, nil
		}
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return false, err
		}
	}
	if e.Size == 0 {
		return true, nil // emptied since the fstatat
	}
	b := t.c.next
	t.c.next++
	dst, err := os.OpenFile(t.c.blobPath(b), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return false, err
	}
	t.made = append(t.made, b)
	// os.File's ReadFrom uses copy_file_range (a reflink where the disk
	// shares extents). The size is the one recorded: a file that grew
	// meanwhile is cut, and its new ctime has it copied again next time.
	n, err := io.Copy(dst, io.LimitReader(f, e.Size))
	if cerr := dst.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return false, err
	}
	e.Size, e.Blob = n, b
	return true, nil
}
