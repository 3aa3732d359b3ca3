package volume

import (
	"errors"
	"fmt"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// Free is what is left on dir's filesystem for an unprivileged writer
// (statfs f_bavail): a sparse image grows into exactly that, and the
// blocks kept for root are not the daemon's to promise.
func Free(dir string) (int64, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, err
	}
	return int64(st.Bavail) * st.Bsize, nil
}

// Allocated is what dir's image takes on the host now (its allocated
// blocks, not its size: images are sparse); 0 for a Plain folder, whose
// files were written on the host as they came, or if there is no image.
func Allocated(kind Kind, dir string) int64 {
	if kind != Loop {
		return 0
	}
	fi, err := os.Stat(image(dir))
	if err != nil {
		return 0
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return st.Blocks * 512
	}
	return fi.Size()
}

// Exists reports whether dir's filesystem was made already: its image, or
// for a Plain folder the folder itself. One that does not exist takes new
// space from the host when Ensure makes it.
func Exists(kind Kind, dir string) bool {
	p := Root(dir)
	if kind == Loop {
		p = image(dir)
	}
	_, err := os.Stat(p)
	return err == nil
}

// ErrReadOnly is the class of a session filesystem that no longer takes
// writes.
var ErrReadOnly = errors.New("the session's filesystem is read-only")

// CheckWritable says why dir's filesystem cannot take writes, nil if it
// can. ext4 remounts itself read-only when it meets an error (a write the
// host's disk refused under it, a damaged journal): such a filesystem
// looks mounted and well, yet every write in it fails with EROFS.
func CheckWritable(kind Kind, dir string) error {
	if kind != Loop {
		return nil
	}
	var st unix.Statfs_t
	if err := unix.Statfs(Root(dir), &st); err != nil {
		return fmt.Errorf("statfs %s: %w", Root(dir), err)
	}
	if st.Flags&unix.ST_RDONLY != 0 {
		return fmt.Errorf("%w (mounted read-only: ext4 found an error in it)", ErrReadOnly)
	}
	return nil
}
