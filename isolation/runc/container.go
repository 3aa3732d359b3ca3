package runc

import (
	"errors"
	"sync"
	"time"

	ocgroups "github.com/opencontainers/cgroups"
	"github.com/opencontainers/runc/libcontainer"
	"golang.org/x/sys/unix"

	"github.com/sandboxd/sandboxd/isolation"
)

// runcContainer is a libcontainer container.
type runcContainer struct {
	c    *libcontainer.Container
	init *initOnce
}

// Pin the implementation to the seam.
var _ isolation.Container = runcContainer{}

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

func (c runcContainer) Kill() error {
	if err := c.c.Signal(unix.SIGKILL); err != nil && !errors.Is(err, libcontainer.ErrNotRunning) {
		return err
	}
	return nil
}

// Destroy removes a stopped container's cgroup and state. On v1 the
// cgroup can be busy for a moment after the last exit: retry briefly.
func (c runcContainer) Destroy() error { return isolation.RetryBusy(c.c.Destroy) }

func (c runcContainer) Stats() (*ocgroups.Stats, error) {
	st, err := c.c.Stats()
	if err != nil {
		return nil, err
	}
	return st.CgroupStats, nil
}

func (c runcContainer) CgroupPaths() (map[string]string, error) {
	st, err := c.c.State()
	if err != nil {
		return nil, err
	}
	return st.CgroupPaths, nil
}

// Pause freezes the container's cgroup. A v1 freezer can stay FREEZING
// while a task of the cgroup cannot be frozen yet; libcontainer then
// gives up ("unable to freeze") and thaws it, and a later try, a moment
// apart, freezes it (CI saw it once, on a session made an instant
// before).
func (c runcContainer) Pause() error {
	var err error
	for try := range pauseTries {
		if try > 0 {
			time.Sleep(50 * time.Millisecond)
		}
		if err = c.c.Pause(); err == nil || errors.Is(err, libcontainer.ErrNotRunning) {
			return err
		}
	}
	return err
}

// pauseTries bounds Pause's tries.
const pauseTries = 3

func (c runcContainer) Resume() error { return c.c.Resume() }

func (c runcContainer) Resources() ocgroups.Resources { return *c.c.Config().Cgroups.Resources }

func (c runcContainer) Set(r *ocgroups.Resources) error {
	cfg := c.c.Config()
	cg := *cfg.Cgroups
	cg.Resources = r
	cfg.Cgroups = &cg
	return c.c.Set(cfg)
}

func (c runcContainer) InitProcess() (int, uint64, error) {
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
