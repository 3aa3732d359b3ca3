package isolation

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
// child starts in its parent thread's cgroups). That thread never leaves
// them: it is locked to this goroutine, which ends without unlocking it,
// and Go ends the thread with it.
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
		runtime.LockOSThread() // for good: see above
		tid := strconv.Itoa(unix.Gettid())
		for name, dir := range cg.GetPaths() {
			if name == "" {
				continue // a hybrid host's unified hierarchy places processes only
			}
			err := ocgroups.WriteFile(dir, "tasks", tid)
			if errors.Is(err, os.ErrNotExist) {
				continue // a controller cg does not use (devices, for runsc)
			}
			if err != nil {
				errc <- fmt.Errorf("sandbox cgroup %s: %w", name, err)
				return
			}
		}
		errc <- cmd.Start()
	}()
	return <-errc
}
