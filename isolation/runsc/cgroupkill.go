package runsc

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"time"

	ocgroups "github.com/opencontainers/cgroups"
	"golang.org/x/sys/unix"
)

// killAll SIGKILLs every process in cg and waits, 5 s at most, until none
// is left. The cgroup says which processes are the sandbox's: unlike a
// pid recorded earlier, its list cannot name a stranger that was given a
// dead process's pid. It is frozen while its pids are read and signalled,
// so that none of them exits (and is reused) in between; on cgroup v2,
// cgroup.kill does it all in the kernel.
func killAll(cg ocgroups.Manager) error {
	dir := procsDir(cg)
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	killed := false
	if ocgroups.IsCgroup2UnifiedMode() {
		err := ocgroups.WriteFile(cg.Path(""), "cgroup.kill", "1")
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		killed = err == nil
	}
	if !killed {
		frozen := cg.Freeze(ocgroups.Frozen) == nil
		pids, err := ocgroups.GetAllPids(dir)
		for _, pid := range notSelf(pids) {
			if fd, err := unix.PidfdOpen(pid, 0); err == nil {
				_ = unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0)
				unix.Close(fd)
			}
		}
		if frozen {
			_ = cg.Freeze(ocgroups.Thawed)
		}
		if err != nil {
			return err
		}
	}
	for i := 0; i < 250; i++ {
		pids, err := ocgroups.GetAllPids(dir)
		if err != nil || len(notSelf(pids)) == 0 {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("processes of cgroup %s left after SIGKILL", cg.Path(""))
}

// procsDir is the folder of cg whose cgroup.procs lists its processes.
// Not cg.GetAllPids nor cg.Exists: on cgroup v1 those read the devices
// hierarchy, where a runsc sandbox has no folder (its device rules are
// gVisor's: SkipDevices), so they said "no such cgroup" and a leftover
// runsc sandbox was never killed (its cgroup then stayed busy).
func procsDir(cg ocgroups.Manager) string {
	if ocgroups.IsCgroup2UnifiedMode() {
		return cg.Path("")
	}
	return cg.Path("freezer")
}

// notSelf is pids without the daemon's: a thread of it that startIn could
// not move back out of a v1 cgroup lists the daemon there.
func notSelf(pids []int) []int {
	self := os.Getpid()
	return slices.DeleteFunc(pids, func(p int) bool { return p == self })
}
