package runsc

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"

	ocgroups "github.com/opencontainers/cgroups"
	"github.com/opencontainers/cgroups/manager"
	"github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"

	"github.com/sandboxd/sandboxd/isolation"
	"github.com/sandboxd/sandboxd/isolation/agent"
)

// A runsc sandbox as the rest of the runtime sees it: isolation.Container
// over runsc's sandbox process and its cgroup (runsc.go drives the runsc
// binary that makes it).

// cgroup is the cgroup of runsc sandbox id, with limits res.
func (e *engine) cgroup(id string, res *specs.LinuxResources) (ocgroups.Manager, error) {
	return manager.New(&ocgroups.Cgroup{Path: e.r.Cgroups().PathFor(id), Resources: cgroupResources(res)})
}

// container is the runsc sandbox id of spec in cgroup cg, with its
// bundle in folder dir, whose sandbox process's pid is in pidFile (or,
// when pidFile is "", runsc's state says).
func (e *engine) container(id, dir, pidFile string, cg ocgroups.Manager, spec *specs.Spec) (*gvisorContainer, error) {
	network := specNetwork(spec)
	var pid int
	if pidFile != "" {
		b, err := os.ReadFile(pidFile)
		if err != nil {
			return nil, err
		}
		if pid, err = strconv.Atoi(strings.TrimSpace(string(b))); err != nil {
			return nil, fmt.Errorf("runsc pid file: %w", err)
		}
	} else {
		st, err := e.rs.state(id, network)
		if err != nil {
			return nil, err
		}
		if st.Status != "running" {
			return nil, fmt.Errorf("sandbox is %s", st.Status)
		}
		pid = st.Pid
	}
	pidfd, err := unix.PidfdOpen(pid, unix.PIDFD_NONBLOCK)
	if err != nil {
		return nil, fmt.Errorf("watch runsc sandbox %d: %w", pid, err)
	}
	start, err := isolation.StartTime(pid)
	if err != nil {
		unix.Close(pidfd)
		return nil, err
	}
	return &gvisorContainer{rs: e.rs, id: id, dir: dir, network: network, python: agent.PythonOf(spec.Process.Args), user: spec.Process.User,
		pid: pid, start: start, pidfd: pidfd, cg: cg, res: resourcesOf(cg)}, nil
}

// specNetwork is the --network of the runsc sandbox of spec.
func specNetwork(spec *specs.Spec) string {
	if n := spec.Annotations[runscNetworkKey]; n != "" {
		return n
	}
	return runscNetNone // a sandbox of a daemon before networks
}

// cgroupResources is the part of an OCI spec's resources the daemon sets,
// as the cgroup manager takes them.
func cgroupResources(l *specs.LinuxResources) *ocgroups.Resources {
	// Device rules are gVisor's own: its gofer and Sentry open the
	// host's devices they need.
	r := &ocgroups.Resources{SkipDevices: true}
	if l == nil {
		return r
	}
	isolation.SetResources(r, l)
	if c := l.CPU; c != nil {
		r.CpusetCpus = c.Cpus
	}
	return r
}

// gvisorContainer is a sandbox runsc runs. Its limits, stats and freezer
// are its cgroup's, read and written directly (runsc applied the spec's
// limits there at create); its end is its sandbox process's, watched
// through a pidfd (runsc's processes are not the daemon's children).
type gvisorContainer struct {
	rs      *runsc
	id      string
	dir     string // its bundle's folder
	network string // its --network
	// python and user are the agent's interpreter and user, for the port
	// proxy's helper (dialPort).
	python string
	user   specs.User
	pid    int
	start  uint64
	cg     ocgroups.Manager

	mu     sync.Mutex
	pidfd  int // -1 once closed
	res    ocgroups.Resources
	closed bool
}

// Pin the implementation to the seam.
var _ interface {
	isolation.Container
	isolation.PortDialer
} = (*gvisorContainer)(nil)

func (c *gvisorContainer) Kill() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	if err := unix.PidfdSendSignal(c.pidfd, unix.SIGKILL, nil, 0); err != nil && err != unix.ESRCH {
		return err
	}
	return nil
}

// Destroy deletes runsc's state of the exited sandbox, and its cgroup
// (with whatever of the gofer is left in it).
func (c *gvisorContainer) Destroy() error {
	c.close()
	return c.rs.remove(c.id, c.cg)
}

// close lets go of the pidfd.
func (c *gvisorContainer) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.closed {
		unix.Close(c.pidfd)
		c.closed = true
	}
}

func (c *gvisorContainer) Stats() (*ocgroups.Stats, error)         { return c.cg.GetStats() }
func (c *gvisorContainer) CgroupPaths() (map[string]string, error) { return c.cg.GetPaths(), nil }
func (c *gvisorContainer) Pause() error                            { return c.cg.Freeze(ocgroups.Frozen) }
func (c *gvisorContainer) Resume() error                           { return c.cg.Freeze(ocgroups.Thawed) }

func (c *gvisorContainer) Resources() ocgroups.Resources {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.res
}

func (c *gvisorContainer) Set(r *ocgroups.Resources) error {
	if err := c.cg.Set(r); err != nil {
		return err
	}
	c.mu.Lock()
	c.res = *r
	c.mu.Unlock()
	return nil
}

func (c *gvisorContainer) InitProcess() (int, uint64, error) { return c.pid, c.start, nil }

// dupPidfd is a descriptor of the sandbox process for a watcher of its
// own.
func (c *gvisorContainer) dupPidfd() (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return -1, errors.New("sandbox let go")
	}
	return unix.FcntlInt(uintptr(c.pidfd), unix.F_DUPFD_CLOEXEC, 0)
}

// resourcesOf is the limits cgroup manager m was made with.
func resourcesOf(m ocgroups.Manager) ocgroups.Resources {
	if c, err := m.GetCgroups(); err == nil && c.Resources != nil {
		return *c.Resources
	}
	return ocgroups.Resources{}
}
