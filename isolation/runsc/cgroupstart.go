package runsc

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"syscall"

	ocgroups "github.com/opencontainers/cgroups"
	"golang.org/x/sys/unix"

	"github.com/sandboxd/sandboxd/cgroups"
)

// startIn starts cmd with its process in cgroup cg from its first
// instruction, so that whatever it forks before it exits is cg's too.
// runsc is started this way (with --ignore-cgroups): given the cgroup's
// path instead, it would write every controller the host has into the
// cgroup.subtree_control of each of the path's parents on cgroup v2, the
// root's and systemd's slices included, which are not the daemon's.
//
// On cgroup v2 the kernel places the child (clone3 CLONE_INTO_CGROUP). v1
// has no such call: the child is forked from a thread of the daemon that
// was moved into cg's folders first (v1 places threads one by one, and a
// child starts in its parent thread's cgroups), then moved back where it
// was. The thread is locked to its goroutine meanwhile; if it cannot go
// back it stays locked, and Go ends it with the goroutine (or, were it the
// main thread, parks it for good: killAll never signals the daemon).
func startIn(cmd *exec.Cmd, cg ocgroups.Manager) error {
	if ocgroups.IsCgroup2UnifiedMode() {
		fd, err := unix.Open(cg.Path(""), unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("sandbox cgroup: %w", err)
		}
		defer unix.Close(fd)
		if cmd.SysProcAttr == nil {
			cmd.SysProcAttr = &syscall.SysProcAttr{}
		}
		cmd.SysProcAttr.UseCgroupFD = true
		cmd.SysProcAttr.CgroupFD = fd
		return cmd.Start()
	}
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		own, err := ocgroups.ParseCgroupFile("/proc/thread-self/cgroup")
		var home map[string]string
		if err == nil {
			home, err = cgroups.V1Folders(own)
		}
		if err != nil {
			runtime.UnlockOSThread()
			errc <- err
			return
		}
		tid := strconv.Itoa(unix.Gettid())
		moved, err := moveThread(tid, cg.GetPaths())
		if err == nil {
			err = cmd.Start()
		}
		back := map[string]string{}
		for _, name := range moved {
			back[name] = home[name]
		}
		if n, herr := moveThread(tid, back); herr == nil && len(n) == len(moved) {
			runtime.UnlockOSThread()
		}
		errc <- err
	}()
	return <-errc
}

// moveThread writes thread tid into the tasks file of each v1 folder of
// dirs (by subsystem), and says which it moved it to. A hybrid host's
// unified hierarchy ("") places processes only, and a folder that does
// not exist is a controller the sandbox does not use (devices, for
// runsc): both are left out.
func moveThread(tid string, dirs map[string]string) ([]string, error) {
	var moved []string
	for name, dir := range dirs {
		if name == "" || dir == "" {
			continue
		}
		err := ocgroups.WriteFile(dir, "tasks", tid)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return moved, fmt.Errorf("sandbox cgroup %s: %w", name, err)
		}
		moved = append(moved, name)
	}
	return moved, nil
}
