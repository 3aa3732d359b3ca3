// Package volume gives each session a filesystem of its own size: a sparse
// ext4 image in the session's folder, attached to a loop device and mounted
// on the host, holding the session's /workspace and /tmp. Writes past the
// size fail inside the sandbox with ENOSPC, as on a full disk, and what the
// filesystem reports as used is exactly what the session takes — a real
// quota, not a scan that deletes after the fact.
//
// Layout of a session folder DIR:
//
//	DIR/disk.img        the image (sparse: it takes only what is written)
//	DIR/fs/             its mountpoint
//	DIR/fs/workspace    shown at /workspace
//	DIR/fs/tmp          shown at /tmp, emptied at every start
//
// With quotas off (Plain), fs is an ordinary folder with the same layout.
package volume

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"github.com/moby/sys/mountinfo"
	"golang.org/x/sys/unix"
)

// Kind is how session folders are made.
type Kind string

const (
	// Loop is a loop-mounted ext4 image per session: disk_mb enforced.
	Loop Kind = "loop"
	// Plain is a folder on the data dir's filesystem: disk_mb not enforced.
	Plain Kind = "none"
)

// MinBytes is the smallest filesystem made: below it ext4 has no room for
// its journal.
const MinBytes = 16 << 20

// Paths of one session folder.
func image(dir string) string { return filepath.Join(dir, "disk.img") }

// Root is where the session's filesystem is (mounted).
func Root(dir string) string { return filepath.Join(dir, "fs") }

// Workspace is the host folder shown at /workspace.
func Workspace(dir string) string { return filepath.Join(dir, "fs", "workspace") }

// Tmp is the host folder shown at /tmp.
func Tmp(dir string) string { return filepath.Join(dir, "fs", "tmp") }

// Ensure makes the session folder dir ready: made (of size bytes) if new,
// mounted if not (after a reboot), with a workspace. It is idempotent. A
// new image is copied from pristine's, or made by mkfs.ext4 if it is nil.
//
// dir and its filesystem are 0711: a sandbox's root in its user namespace
// is a nobody on the host that must reach the workspace through them; no
// one may list them.
func Ensure(ctx context.Context, kind Kind, pristine *Pristine, dir string, size int64) error {
	if err := os.MkdirAll(Root(dir), 0o711); err != nil {
		return err
	}
	if err := os.Chmod(dir, 0o711); err != nil {
		return err
	}
	if kind == Loop {
		mounted, err := mountinfo.Mounted(Root(dir))
		if err != nil {
			return err
		}
		if !mounted {
			if _, err := os.Stat(image(dir)); errors.Is(err, os.ErrNotExist) {
				if pristine != nil {
					err = pristine.make(ctx, image(dir), max(size, MinBytes))
				} else {
					err = mkfs(ctx, image(dir), size)
				}
				if err != nil {
					return err
				}
			}
			if err := mount(image(dir), Root(dir)); err != nil {
				return err
			}
		}
	}
	if err := os.Chmod(Root(dir), 0o711); err != nil {
		return err
	}
	return os.MkdirAll(Workspace(dir), 0o700)
}

// mkfs makes the image: a sparse file of size bytes with ext4 on it, no
// blocks kept for root (the daemon's uploads count like any write), and the
// lazy initialisation that makes it take milliseconds.
func mkfs(ctx context.Context, img string, size int64) (retErr error) {
	if size < MinBytes {
		size = MinBytes
	}
	f, err := os.OpenFile(img, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	defer func() {
		if retErr != nil {
			os.Remove(img)
		}
	}()
	err = f.Truncate(size)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	bin, err := FindMkfs()
	if err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, bin, "-q", "-F", "-t", "ext4", "-m", "0",
		"-E", "lazy_itable_init=1,lazy_journal_init=1,nodiscard", img)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("mkfs.ext4: %v: %s", err, out)
	}
	return nil
}

// FindMkfs finds mkfs.ext4, also in the sbin folders a daemon's PATH may
// lack.
func FindMkfs() (string, error) {
	if p, err := exec.LookPath("mkfs.ext4"); err == nil {
		return p, nil
	}
	for _, p := range []string{"/usr/sbin/mkfs.ext4", "/sbin/mkfs.ext4"} {
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return "", errors.New("disk quotas need mkfs.ext4: install e2fsprogs, or set disk_quota = \"none\"")
}

// mount attaches img to a free loop device and mounts it at target. The
// device is set to detach itself when unmounted, so nothing is left to
// clean up but the mount.
func mount(img, target string) error {
	dev, err := attach(img)
	if err != nil {
		return fmt.Errorf("loop device for %s: %w", img, err)
	}
	// The device stays attached while mounted; closing our fd is safe only
	// once the mount holds it.
	defer dev.Close()
	// discard: files deleted inside give their space back to the host.
	// noinit_itable: mkfs left the inode tables uninitialised (lazy, so
	// that it takes milliseconds), and the kernel would zero them after
	// the mount (16 MiB for 1 GiB, as fallocate calls on the image, each
	// a host journal entry). They are holes of a sparse image, which read
	// as zeros already.
	if err := unix.Mount(dev.Name(), target, "ext4", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOATIME, "discard,noinit_itable"); err != nil {
		return fmt.Errorf("mount %s: %w", img, err)
	}
	return nil
}

// attach binds img to a free loop device, retrying when another process
// takes the device it was offered.
func attach(img string) (*os.File, error) {
	ctl, err := os.OpenFile("/dev/loop-control", os.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("%w (disk quotas need loop devices; set disk_quota = \"none\" where there are none)", err)
	}
	defer ctl.Close()
	f, err := os.OpenFile(img, os.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	cfg := unix.LoopConfig{Fd: uint32(f.Fd())}
	cfg.Info.Flags = unix.LO_FLAGS_AUTOCLEAR
	copy(cfg.Info.File_name[:len(cfg.Info.File_name)-1], img)
	// LOOP_CTL_GET_FREE hands the same free device to every caller that
	// asks at once: under many concurrent creates most lose the race to
	// configure it. They ask again, after a pause of their own so that
	// they do not meet again.
	for i := range 200 {
		if i > 0 {
			time.Sleep(time.Duration(1+rand.IntN(5)) * time.Millisecond)
		}
		n, err := unix.IoctlRetInt(int(ctl.Fd()), unix.LOOP_CTL_GET_FREE)
		if err != nil {
			return nil, fmt.Errorf("no free loop device: %w", err)
		}
		dev, err := os.OpenFile("/dev/loop"+strconv.Itoa(n), os.O_RDWR|unix.O_CLOEXEC, 0)
		if err != nil {
			return nil, err
		}
		err = unix.IoctlLoopConfigure(int(dev.Fd()), &cfg)
		if err == nil {
			return dev, nil
		}
		dev.Close()
		if !errors.Is(err, unix.EBUSY) {
			return nil, err
		}
	}
	return nil, errors.New("every free loop device was taken by someone else first")
}

// Remove unmounts dir's filesystem, if mounted, and deletes the folder.
func Remove(dir string) error {
	if err := Unmount(dir); err != nil {
		return err
	}
	return os.RemoveAll(dir)
}

// Unmount unmounts dir's filesystem if it is mounted. A mount still busy
// for a moment after its sandbox died is retried, then detached lazily.
func Unmount(dir string) error {
	root := Root(dir)
	for i := 0; ; i++ {
		mounted, err := mountinfo.Mounted(root)
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				return nil
			}
			return err
		}
		if !mounted {
			return nil
		}
		err = unix.Unmount(root, 0)
		switch {
		case err == nil, errors.Is(err, unix.EINVAL):
			continue // check again: mounts can be stacked
		case errors.Is(err, unix.EBUSY) && i < 50:
			time.Sleep(20 * time.Millisecond)
		case errors.Is(err, unix.EBUSY):
			return unix.Unmount(root, unix.MNT_DETACH)
		default:
			return fmt.Errorf("unmount %s: %w", root, err)
		}
	}
}

// Usage is the space used and the size of dir's filesystem; for a Plain
// folder, the blocks of its files and 0.
func Usage(kind Kind, dir string) (used, size int64, err error) {
	if kind != Loop {
		return plainUsage(Root(dir)), 0, nil
	}
	var st unix.Statfs_t
	if err := unix.Statfs(Root(dir), &st); err != nil {
		return 0, 0, err
	}
	return int64(st.Blocks-st.Bfree) * st.Bsize, int64(st.Blocks) * st.Bsize, nil
}
