package isolation

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// A sandbox's mount table (/proc/self/mountinfo, mounts, mountstats) shows,
// for each mount, its source and the path of its root inside the
// filesystem it comes from: a bind mount of a host folder shows the
// folder's host path. Bound as they are, the folders the runtime makes for
// a sandbox would show the run dir, the daemon's instance id and the
// session's id (its root), and the data dir (an imported image's folders).
//
// So, while a sandbox starts, each of them is the root of a filesystem of
// its own, mounted on the host in the sandbox's folder with "sandbox" as
// its source:
//
//	<dir>/rootfs  a tmpfs with the root's skeleton (mountpoints, symlinks)
//	<dir>/etc     a read-only overlay of the image's /etc
//	<dir>/image   a read-only overlay of an imported image's root filesystem
//	<dir>/packages  a read-only overlay of a template's packages folder
//
// The overlays name their layers by /proc/self/fd/N, so their options show
// descriptor numbers, not paths. libcontainer binds them into the
// sandbox's own mount namespace; once the sandbox runs, the host's copies
// are unmounted, so nothing of a start stays mounted on the host.
//
// The host image's system folders (/usr, /bin, ...) are bound as they
// are: their path is the one the sandbox sees them at. /workspace and
// /tmp are the session's: with disk quotas, the root of its own ext4 (the
// lines show /workspace, /tmp and a loop device); without
// (disk_quota = "none") folders of the data dir, bound as they are — a
// bind cannot hide its root's path, and an overlay cannot serve a folder
// the daemon writes into while it is mounted — so those two lines show
// their host path.

// viewSource is the source every mount of the view shows.
const viewSource = "sandbox"

// mountView mounts what sandbox p starts from (see above) and returns img
// as the sandbox is to see it: its root in p.rootfs, its /etc and folders
// from the mounts, and the template's packages folder if it has one.
// The root of a sandbox on a kernel of its own (ownKernel: runsc's) also
// has the mountpoint of its agent's folder. unmountView undoes it.
func (r *Runtime) mountView(p *paths, img *Image, packages string, ownKernel bool, mountPoints ...string) (*Image, error) {
	if err := os.MkdirAll(p.rootfs, 0o755); err != nil {
		return nil, err
	}
	// The skeleton takes a few dozen inodes and no data. runsc's gofer, in
	// the sandbox's user namespace, remounts it read-only with no other
	// flag, which the kernel refuses for a mount with flags it locked.
	flags := uintptr(unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOEXEC)
	if ownKernel {
		flags = 0
	}
	if err := unix.Mount(viewSource, p.rootfs, "tmpfs", flags, "mode=0755,size=256k,nr_inodes=4096"); err != nil {
		return nil, fmt.Errorf("mount the root: %w", err)
	}
	extra := mountPoints
	if packages != "" {
		extra = append(extra, PackagesDir)
	}
	if ownKernel {
		extra = append(extra, agentDir)
	}
	if err := makeSkeleton(p.rootfs, img, extra...); err != nil {
		return nil, err
	}
	v := *img
	v.packages = packages
	if !r.overlay {
		return &v, nil
	}
	if packages != "" {
		if err := overlayOf(packages, r.empty, p.packages); err != nil {
			return nil, fmt.Errorf("mount the packages: %w", err)
		}
		v.packages = p.packages
	}
	if err := overlayOf(img.etc, r.empty, p.etc); err != nil {
		return nil, fmt.Errorf("mount /etc: %w", err)
	}
	v.etc = p.etc
	if img.Rootfs != "" {
		if err := overlayOf(img.Rootfs, r.empty, p.image); err != nil {
			return nil, fmt.Errorf("mount the image: %w", err)
		}
		v.binds = make([]bind, len(img.binds))
		for i, b := range img.binds {
			v.binds[i] = bind{src: filepath.Join(p.image, b.dst), dst: b.dst}
		}
	}
	return &v, nil
}

// overlayOf mounts a read-only overlay of folder dir at target: a
// filesystem whose root is dir. An overlay without an upper layer needs two
// lower ones: the second is empty.
func overlayOf(dir, empty, target string) error {
	if err := os.MkdirAll(target, 0o755); err != nil {
		return err
	}
	var fds []int
	defer func() {
		for _, fd := range fds {
			unix.Close(fd)
		}
	}()
	for _, d := range []string{dir, empty} {
		fd, err := unix.Open(d, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return &os.PathError{Op: "open", Path: d, Err: err}
		}
		fds = append(fds, fd)
	}
	opts := fmt.Sprintf("lowerdir=/proc/self/fd/%d:/proc/self/fd/%d", fds[0], fds[1])
	return unix.Mount(viewSource, target, "overlay", unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV, opts)
}

// unmountView unmounts the host's copies of a sandbox's view: once the
// sandbox runs it has its own. Nothing mounted (unmounted already, or
// never) is fine; what a crashed daemon left, even twice over, goes too.
func unmountView(p *paths) error {
	var errs []error
	for _, d := range []string{p.packages, p.image, p.etc, p.rootfs} {
		errs = append(errs, unmountAll(d))
	}
	return errors.Join(errs...)
}

// unmountAll unmounts whatever is mounted at d, however many times over;
// nothing mounted is fine.
func unmountAll(d string) error {
	for {
		err := unix.Unmount(d, unix.MNT_DETACH|unix.UMOUNT_NOFOLLOW)
		if err == unix.EINVAL || err == unix.ENOENT {
			return nil
		}
		if err != nil {
			return fmt.Errorf("unmount %s: %w", d, err)
		}
	}
}

// overlaySupported tries an overlay like the view's in dir. Without
// overlayfs (a kernel without it, a daemon in a container that may not
// mount it) sandboxes get their /etc and image folders bound as they are,
// and their mount table shows those folders' host paths.
func overlaySupported(dir, empty string) error {
	tmp, err := os.MkdirTemp(dir, ".overlay-probe-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	lower, target := filepath.Join(tmp, "lower"), filepath.Join(tmp, "target")
	if err := os.Mkdir(lower, 0o755); err != nil {
		return err
	}
	if err := overlayOf(lower, empty, target); err != nil {
		return err
	}
	return unix.Unmount(target, unix.MNT_DETACH)
}
