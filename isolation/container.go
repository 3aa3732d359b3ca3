package isolation

import (
	"context"
	"fmt"
	"net"
	"time"

	ocgroups "github.com/opencontainers/cgroups"
	"golang.org/x/sys/unix"
)

// Container is what a Sandbox runs in: libcontainer's container (package
// isolation/runc) or a gVisor sandbox that runsc runs (package
// isolation/runsc). Everything above it — the agent's connection,
// executions, interrupts, limits, meters — is the same for both, and is
// the Sandbox's.
type Container interface {
	// Kill sends SIGKILL to every process of the sandbox; a sandbox that
	// runs no more is not an error.
	Kill() error
	// Destroy removes what is left of a sandbox that has exited: its
	// runtime state and cgroup.
	Destroy() error
	Stats() (*ocgroups.Stats, error)
	// CgroupPaths are the sandbox's cgroup folders, as libcontainer
	// names them (cgroups.NewMeter).
	CgroupPaths() (map[string]string, error)
	// Spawn runs a process beside init (Sandbox.Spawn has filled its
	// environment, folder and user in); Processes and Signal list and
	// signal the sandbox's, by the pids the sandbox gives them.
	Spawn(o *ProcessOptions) (*Process, error)
	Processes() ([]ProcessInfo, error)
	Signal(pid int, sig unix.Signal) error
	Pause() error
	Resume() error
	// Resources are the cgroup resources the sandbox has now; Set
	// changes them.
	Resources() ocgroups.Resources
	Set(r *ocgroups.Resources) error
	// InitProcess is the host pid of the sandbox's first process (for
	// runsc, gVisor's sandbox process) and when it started, in clock ticks
	// after boot.
	InitProcess() (pid int, start uint64, err error)
}

// PortDialer is a Container whose loopback the host cannot reach from its
// network namespace (gVisor's netstack is the Sentry's, not the
// kernel's): it connects to a port there its own way. Sandbox.DialPort
// enters the namespace of any other.
type PortDialer interface {
	DialPort(ctx context.Context, port int) (net.Conn, error)
}

// Container is the sandbox's container, for its runtime's engine and
// their tests.
func (s *Sandbox) Container() Container { return s.c }

// RetryBusy calls remove until it succeeds, for up to a second: a cgroup
// can be busy for a moment after its last process exited.
func RetryBusy(remove func() error) error {
	var err error
	for i := 0; i < 50; i++ {
		if err = remove(); err == nil {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("%w (after 1 s of retries)", err)
}
