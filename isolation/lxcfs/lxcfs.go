// Package lxcfs finds an lxcfs mount that serves: the daemon binds its
// files over each sandbox's /proc, and doctor reports whether it can.
package lxcfs

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// Files are the files of an lxcfs mount shown in sandboxes, relative
// to its root and to the sandbox's. runc allows exactly these under /proc
// (libcontainer's checkProcMount).
var Files = []string{
	"proc/meminfo",
	"proc/cpuinfo",
	"proc/stat",
	"proc/uptime",
	"proc/loadavg",
	"proc/diskstats",
	"proc/swaps",
	"sys/devices/system/cpu/online",
}

// ErrNotAnswering is an lxcfs mount whose files do not read: lxcfs died
// or hangs under its mount, and restarting it is what helps (unlike a
// dir where nothing is mounted, where lxcfs is to be installed).
var ErrNotAnswering = errors.New("lxcfs is mounted but does not answer")

// Serving checks dir is a live lxcfs mount: a FUSE filesystem whose
// proc/meminfo reads (a dead lxcfs leaves a mount whose files fail with
// ENOTCONN, which sandboxes must not inherit). It returns the files of
// Files that dir has.
func Serving(dir string) ([]string, error) {
	if dir == "" {
		return nil, errors.New("lxcfs_dir is empty: turned off")
	}
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	if st.Type != unix.FUSE_SUPER_MAGIC {
		return nil, fmt.Errorf("%s is not a FUSE mount: lxcfs is not running there", dir)
	}
	f, err := os.Open(filepath.Join(dir, "proc/meminfo"))
	if err != nil {
		return nil, fmt.Errorf("%w at %s: %w", ErrNotAnswering, dir, err)
	}
	defer f.Close()
	if _, err := f.Read(make([]byte, 64)); err != nil {
		return nil, fmt.Errorf("%w at %s: %w", ErrNotAnswering, dir, err)
	}
	var present []string
	for _, name := range Files {
		if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
			present = append(present, name)
		}
	}
	return present, nil
}
