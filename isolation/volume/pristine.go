package volume

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"

	"golang.org/x/sys/unix"
)

// Pristine keeps one freshly made, never mounted image per size in Dir,
// and makes a session's image as a sparse copy of it: the few hundred KiB
// mkfs.ext4 writes, copied in the kernel, instead of running mkfs for every
// session. Identical filesystem UUIDs are harmless for ext4 mounts.
type Pristine struct {
	Dir string
	mu  sync.Mutex
}

// make makes img, of size bytes, from the pristine image of that size.
func (p *Pristine) make(ctx context.Context, img string, size int64) error {
	src, err := p.image(ctx, size)
	if err != nil {
		return err
	}
	return copySparse(src, img, size)
}

// image is the pristine image of size bytes, made on first use.
func (p *Pristine) image(ctx context.Context, size int64) (string, error) {
	path := filepath.Join(p.Dir, fmt.Sprintf("ext4-%d.img", size))
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, err := os.Stat(path); err == nil {
		return path, nil
	}
	if err := os.MkdirAll(p.Dir, 0o700); err != nil {
		return "", err
	}
	tmp := path + ".new"
	_ = os.Remove(tmp)
	if err := mkfs(ctx, tmp, size); err != nil {
		return "", err
	}
	return path, os.Rename(tmp, path)
}

// copySparse copies the data extents of src into a new file dst of size
// bytes, leaving the holes holes.
func copySparse(src, dst string, size int64) (retErr error) {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := out.Close(); retErr == nil {
			retErr = cerr
		}
		if retErr != nil {
			os.Remove(dst)
		}
	}()
	if err := out.Truncate(size); err != nil {
		return err
	}
	if err := copyExtents(in, out, size); err != nil {
		return err
	}
	// The copy is flushed by the sandbox's start, before the session's
	// record can be written: a filesystem that does not order file data
	// before its journal (XFS, btrfs) could otherwise keep the record
	// across a crash and lose the disk it names. On ext4 the record's own
	// sync flushed it anyway: the start pays it instead (a pool refill,
	// in the background, not the claim).
	return out.Sync()
}

// copyExtents copies the data extents of in below size into out, at the
// same offsets.
func copyExtents(in, out *os.File, size int64) error {
	for off := int64(0); off < size; {
		data, err := unix.Seek(int(in.Fd()), off, unix.SEEK_DATA)
		if errors.Is(err, unix.ENXIO) {
			return nil // only holes from here on
		}
		if err != nil {
			return err
		}
		hole, err := unix.Seek(int(in.Fd()), data, unix.SEEK_HOLE)
		if err != nil {
			return err
		}
		for r, w := data, data; r < hole; {
			n, err := unix.CopyFileRange(int(in.Fd()), &r, int(out.Fd()), &w, int(hole-r), 0)
			if err != nil {
				return err
			}
			if n == 0 {
				return io.ErrUnexpectedEOF
			}
		}
		off = hole
	}
	return nil
}
