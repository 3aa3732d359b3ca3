package isolation

import (
	"errors"
	"fmt"
	"sync"
	"time"

	ocgroups "github.com/opencontainers/cgroups"
	"github.com/opencontainers/runc/libcontainer"
	"golang.org/x/sys/unix"
)

// container is what a Sandbox runs in: libcontainer's container (runtime
// "runc") or a gVisor sandbox that runsc runs (runsc.go). Everything above
// it — the agent's connection, executions, interrupts, limits — is the
// same for both.
type container interface {
	// kill sends SIGKILL to every process of the sandbox; a sandbox that
	// runs no more is not an error.
	kill() error
	// destroy removes what is left of a sandbox that has exited: its
	// runtime state and cgroup.
	destroy() error
	stats() (*ocgroups.Stats, error)
	// cgroupPaths are the sandbox's cgroup folders, as libcontainer
	// names them (cgroups.NewMeter).
	cgroupPaths() (map[string]string, error)
	// spawn runs a process beside init (attach.go); processes and
	// signal list and signal the sandbox's (procs.go).
	spawn(o *ProcessOptions) (*Process, error)
	processes() ([]ProcessInfo, error)
	signal(pid int, sig unix.Signal) error
	pause() error
	resume() error
	// resources are the cgroup resources the sandbox has now; set
	// changes them.
	resources() ocgroups.Resources
	set(r *ocgroups.Resources) error
	// initProcess is the host pid of the sandbox's first process (for
	// runsc, gVisor's sandbox process) and when it started, in clock ticks
	// after boot.
	initProcess() (pid int, start uint64, err error)
}

// runcContainer is a libcontainer container.
type runcContainer struct {
	c    *libcontainer.Container
	init *initOnce
}

func newRuncContainer(c *libcontainer.Container) runcContainer {
	return runcContainer{c: c, init: &initOnce{}}
}

// initOnce keeps the container's first process as State found it once
// running: a pid and start time that last as long as the container.
// State costs a claim from a warm pool ~0.2 ms (it reads the process's
// namespaces and cgroups too); a claim asks only for the pid.
type initOnce struct {
	mu    sync.Mutex
	pid   int
	start uint64
}

func (c runcContainer) kill() error {
	if err := c.c.Signal(unix.SIGKILL); err != nil && !errors.Is(err, libcontainer.ErrNotRunning) {
		return err
	}
	return nil
}

// destroy removes a stopped container's cgroup and state. On v1 the
// cgroup can be busy for a moment after the last exit: retry briefly.
func (c runcContainer) destroy() error { return retryBusy(c.c.Destroy) }

func (c runcContainer) stats() (*ocgroups.Stats, error) {
	st, err := c.c.Stats()
	if err != nil {
		return nil, err
	}
	return st.CgroupStats, nil
}

func (c runcContainer) cgroupPaths() (map[string]string, error) {
	st, err := c.c.State()
	if err != nil {
		return nil, err
	}
	return st.CgroupPaths, nil
}

func (c runcContainer) pause() error  { return c.c.Pause() }
func (c runcContainer) resume() error { return c.c.Resume() }

func (c runcContainer) resources() ocgroups.Resources { return *c.c.Config().Cgroups.Resources }

func (c runcContainer) set(r *ocgroups.Resources) error {
	cfg := c.c.Config()
	cg := *cfg.Cgroups
	cg.Resources = r
	cfg.Cgroups = &cg
	return c.c.Set(cfg)
}

func (c runcContainer) initProcess() (int, uint64, error) {
	c.init.mu.Lock()
	defer c.init.mu.Unlock()
	if c.init.pid > 0 {
		return c.init.pid, c.init.start, nil
	}
	st, err := c.c.State()
	if err != nil {
		return 0, 0, err
	}
	if st.InitProcessPid > 0 {
		c.init.pid, c.init.start = st.InitProcessPid, st.InitProcessStartTime
	}
	return st.InitProcessPid, st.InitProcessStartTime, nil
}

// retryBusy calls remove until it succeeds, for up to a second: a cgroup
// can be busy for a moment after its last process exited.
func retryBusy(remove func() error) error {
	var err error
	for i := 0; i < 50; i++ {
		if err = remove(); err == nil {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("%w (after 1 s of retries)", err)
}
