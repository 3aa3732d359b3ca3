// Package idmount shows a host folder to a sandbox through an idmapped
// mount: the folder's files keep the ids a sandbox sees inside (its user
// is uid 1000 on disk), and each sandbox's mount shows them as that
// sandbox's own host ids (its block of package idmap). So one folder (a
// volume) is written by several sandboxes at once, each seeing what the
// others wrote as its own user's, and no sandbox's host ids are on disk.
// The kernel maps every access through the mount; nothing is chowned.
package idmount

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"

	"golang.org/x/sys/unix"
)

// Mount binds src at dst (an existing folder), its on-disk ids 0..size-1
// shown as base..base+size-1; readOnly makes the mount read-only.
func Mount(src, dst string, base, size uint32, readOnly bool) error {
	ns, err := userns(base, size)
	if err != nil {
		return err
	}
	defer ns.Close()
	tree, err := unix.OpenTree(unix.AT_FDCWD, src, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC)
	if err != nil {
		return fmt.Errorf("open_tree %s: %w", src, err)
	}
	defer unix.Close(tree)
	attr := &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_IDMAP | unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV, Userns_fd: uint64(ns.Fd())}
	if readOnly {
		attr.Attr_set |= unix.MOUNT_ATTR_RDONLY
	}
	if err := unix.MountSetattr(tree, "", unix.AT_EMPTY_PATH, attr); err != nil {
		return fmt.Errorf("idmap %s: %w", src, err)
	}
	if err := unix.MoveMount(tree, "", unix.AT_FDCWD, dst, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
		return fmt.Errorf("mount %s at %s: %w", src, dst, err)
	}
	return nil
}

// userns is a user namespace whose ids 0..size-1 are the host's
// base..base+size-1: a child made in it, held until its namespace file is
// open. The namespace lives on as long as the file (and the mount made
// with it) does.
func userns(base, size uint32) (*os.File, error) {
	cmd := exec.Command("/proc/self/exe")
	cmd.Args = []string{"sandboxd-userns"}
	m := []syscall.SysProcIDMap{{ContainerID: 0, HostID: int(base), Size: int(size)}}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	defer w.Close()
	cmd.Stdin = r
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:  syscall.CLONE_NEWUSER,
		UidMappings: m, GidMappings: m,
		// Stopped before it runs anything: only its namespace is wanted.
		Ptrace:    true,
		Pdeathsig: syscall.SIGKILL,
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("a user namespace: %w", err)
	}
	defer func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}()
	f, err := os.Open(fmt.Sprintf("/proc/%d/ns/user", cmd.Process.Pid))
	if err != nil {
		return nil, fmt.Errorf("a user namespace: %w", err)
	}
	return f, nil
}
