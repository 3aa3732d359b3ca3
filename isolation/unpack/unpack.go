// Package unpack unpacks root filesystem tarballs (the output of
// `docker export`, or a debootstrap folder tarred up) into a folder of the
// daemon's, safely: no entry lands outside the folder, whatever its name or
// the symlinks before it; device nodes, fifos and sockets are left out;
// everything is owned by root (the daemon), without setuid or setgid bits.
// Modes and modification times are kept.
package unpack

import (
	"archive/tar"
	"bufio"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/containerd/errdefs"
	securejoin "github.com/cyphar/filepath-securejoin"
	"golang.org/x/sys/unix"
)

// Options bound what one tarball may hold.
type Options struct {
	// MaxBytes bounds the bytes of all files together.
	MaxBytes int64
	// MaxEntries bounds the number of entries.
	MaxEntries int
}

// Result says what a tarball held.
type Result struct {
	Entries int
	Bytes   int64
	// Skipped counts device nodes, fifos, sockets and unknown entries.
	Skipped int
}

// Tar unpacks a tar archive, plain or gzip-compressed, from r into dir, an
// empty folder no one else writes to meanwhile. A bad archive, an entry that
// would leave dir or clashes with an earlier one (a symlink loop, a file
// where a folder must be) is an errdefs.ErrInvalidArgument, one over a
// bound ErrTooLarge, a full disk errdefs.ErrResourceExhausted;
// no error names a host path (see entryError). What was unpacked up to it
// stays for the caller to remove.
func Tar(ctx context.Context, r io.Reader, dir string, o Options) (Result, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return Result{}, bad("not a gzip stream: %v", err)
		}
		defer zr.Close()
		r = zr
	} else {
		r = br
	}
	u := &unpacker{dir: dir, o: o, modes: map[string]dirMeta{}}
	tr := tar.NewReader(r)
	for {
		if err := ctx.Err(); err != nil {
			return u.res, err
		}
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return u.res, bad("not a tar archive (or a damaged one): %v", err)
		}
		if o.MaxEntries > 0 && u.res.Entries >= o.MaxEntries {
			return u.res, tooLarge(fmt.Sprintf("the archive has more than %d entries", o.MaxEntries))
		}
		if err := u.entry(hdr, tr); err != nil {
			return u.res, entryError(hdr.Name, err)
		}
	}
	// Folders get their modes last, so that a read-only one is still filled.
	for p, m := range u.modes {
		if err := os.Chmod(p, m.mode); err != nil {
			rel, _ := filepath.Rel(dir, p)
			return u.res, entryError(rel, err)
		}
		_ = os.Chtimes(p, m.mtime, m.mtime)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		return u.res, entryError(".", err)
	}
	return u.res, nil
}

type dirMeta struct {
	mode  os.FileMode
	mtime time.Time
}

type unpacker struct {
	dir   string
	o     Options
	res   Result
	modes map[string]dirMeta
}

// bad is an error of the archive's making.
func bad(format string, args ...any) error {
	return errdefs.ErrInvalidArgument.WithMessage(fmt.Sprintf(format, args...))
}

// clean turns an entry name into a path relative to the root, or says it
// leaves it. A leading slash is the root itself, as tar means it.
func clean(name string) (string, error) {
	p := path.Clean(strings.TrimLeft(name, "/"))
	if p == ".." || strings.HasPrefix(p, "../") {
		return "", bad("the archive entry %q leaves the root filesystem", name)
	}
	return p, nil
}

// mode is an entry's permission bits, without setuid and setgid.
func mode(hdr *tar.Header) os.FileMode {
	m := os.FileMode(hdr.Mode).Perm()
	if hdr.Mode&0o1000 != 0 {
		m |= os.ModeSticky
	}
	return m
}

func (u *unpacker) entry(hdr *tar.Header, r io.Reader) error {
	rel, err := clean(hdr.Name)
	if err != nil {
		return err
	}
	if rel == "." {
		return nil // the root itself
	}
	switch hdr.Typeflag {
	case tar.TypeDir, tar.TypeReg, tar.TypeSymlink, tar.TypeLink:
	default: // devices, fifos, sockets, and kinds a root filesystem does not need
		u.res.Skipped++
		return nil
	}
	// The parent is resolved inside the root: a symlink made by an earlier
	// entry is followed as the sandbox would follow it, never out.
	parent, err := securejoin.SecureJoin(u.dir, path.Dir(rel))
	if err != nil {
		return err
	}
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return fmt.Errorf("unpack %s: %w", hdr.Name, err)
	}
	target := filepath.Join(parent, path.Base(rel))
	if fi, err := os.Lstat(target); err == nil && !(fi.IsDir() && hdr.Typeflag == tar.TypeDir) {
		// A later entry replaces an earlier one of the same name.
		if err := os.RemoveAll(target); err != nil {
			return err
		}
		delete(u.modes, target)
	}
	u.res.Entries++
	switch hdr.Typeflag {
	case tar.TypeDir:
		if err := os.Mkdir(target, 0o755); err != nil && !os.IsExist(err) {
			return fmt.Errorf("unpack %s: %w", hdr.Name, err)
		}
		u.modes[target] = dirMeta{mode(hdr), hdr.ModTime}
	case tar.TypeReg:
		return u.file(hdr, r, target)
	case tar.TypeSymlink:
		// The target is kept as written: it is only ever followed inside
		// a sandbox, whose root the image is.
		if err := os.Symlink(hdr.Linkname, target); err != nil {
			return fmt.Errorf("unpack %s: %w", hdr.Name, err)
		}
	case tar.TypeLink:
		lrel, err := clean(hdr.Linkname)
		if err != nil {
			return err
		}
		src, err := securejoin.SecureJoin(u.dir, lrel)
		if err != nil {
			return err
		}
		fi, err := os.Lstat(src)
		if err != nil || !fi.Mode().IsRegular() {
			return bad("the archive entry %q links to %q, which is not a file earlier in the archive", hdr.Name, hdr.Linkname)
		}
		if err := os.Link(src, target); err != nil {
			return fmt.Errorf("unpack %s: %w", hdr.Name, err)
		}
	}
	return nil
}

func (u *unpacker) file(hdr *tar.Header, r io.Reader, target string) error {
	if hdr.Size < 0 || (u.o.MaxBytes > 0 && u.res.Bytes+hdr.Size > u.o.MaxBytes) {
		return tooLarge(fmt.Sprintf("the archive holds more than %d MiB of files", u.o.MaxBytes>>20))
	}
	f, err := os.OpenFile(target, os.O_CREATE|os.O_EXCL|os.O_WRONLY|unix.O_NOFOLLOW, 0o600)
	if err != nil {
		return fmt.Errorf("unpack %s: %w", hdr.Name, err)
	}
	n, err := io.Copy(f, io.LimitReader(r, hdr.Size))
	u.res.Bytes += n
	if err == nil && n != hdr.Size {
		err = io.ErrUnexpectedEOF
	}
	if err == nil {
		err = f.Chmod(mode(hdr))
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return bad("the archive ends inside %q", hdr.Name)
		}
		return fmt.Errorf("unpack %s: %w", hdr.Name, err)
	}
	_ = os.Chtimes(target, hdr.ModTime, hdr.ModTime)
	return nil
}
