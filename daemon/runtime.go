package daemon

import (
	"context"
	"net"
	"os"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sandboxd/sandboxd/isolation"
)

// Runtime builds sandboxes: the sealed boundary between the daemon's
// core (sessions, their states, pools, quotas) and what isolates code.
// The daemon hands it an isolation.Spec and gets a Sandbox back; it never
// sees the runtime's own machinery (libcontainer, the agent's wire
// protocol). isolation.Runtime (runc's libcontainer) is one
// implementation; gVisor's runsc is meant to be another; the unit tests
// use a fake.
type Runtime interface {
	// Start builds and starts a sandbox and returns once its agent
	// answers.
	Start(ctx context.Context, spec *isolation.Spec) (Sandbox, error)
	// Restore takes back a sandbox a previous daemon left running.
	Restore(ctx context.Context, spec *isolation.Spec) (Sandbox, error)
	// Leftovers lists the sandboxes of this daemon that exist on the
	// host (state or cgroups), running or not.
	Leftovers() ([]string, error)
	// Cleanup removes whatever is left of sandbox id.
	Cleanup(id string) error
	// CgroupsWritable checks that a sandbox's cgroup can be made now.
	CgroupsWritable() error
	// OpenImage prepares a template's root filesystem (api.RootfsHost
	// aside); RemoveImage lets go of it.
	OpenImage(name, rootfs string) (*isolation.Image, error)
	RemoveImage(name string) error
	// HostOwner is the host uid and gid owning the files of a sandbox
	// with id block idBase; UID the uid code runs as, as it sees itself.
	HostOwner(idBase uint32) (uid, gid int)
	UID() int
	Info() isolation.Info
	// NewNetNS makes a network namespace for a sandbox of a runtime that
	// takes its network at start (isolation.RuntimeInfo.NetworkAtStart),
	// given to it in Spec.NetNS (isolation.NetNSPath).
	NewNetNS() (*os.File, error)
	// CanCheckpoint says whether sandboxes of runtime rt can have their
	// memory saved (Lifecycle.Checkpoint) and be started from it
	// (isolation.Spec.Memory).
	CanCheckpoint(rt string) bool
	// Close lets go of the runtime; running sandboxes stay.
	Close() error
}

// Sandbox is one running sandbox: its roles together, as containerd's
// Task and Process are separate services of one shim. Each role is what
// one kind of caller needs, so a subsystem (a pool, the attach handler, the
// network) can be given the narrow interface and a fake of a few methods.
type Sandbox interface {
	Lifecycle
	Executor
	ProcessTable
	NetworkAccess
}

// Lifecycle is the sandbox as one thing: it runs, answers, is limited,
// measured, frozen, let go of and stopped.
type Lifecycle interface {
	ID() string
	// Check asks the sandbox whether it answers (a health check); Alive
	// whether its first process still runs, without asking it.
	Check(ctx context.Context) error
	Alive() bool
	SetLimits(l isolation.Limits) error
	Stats() (isolation.Stats, error)
	// Ready waits until the sandbox's interpreter has finished starting.
	Ready(ctx context.Context) error
	// Freeze and Thaw pause and resume every process of the sandbox.
	Freeze() error
	Thaw() error
	// Stop kills the sandbox and removes its runtime state (not its
	// workspace); a call while another runs returns once the sandbox is
	// gone. Detach lets go of it, running, for the next daemon.
	Stop() error
	Detach()
	// Checkpoint saves the sandbox's memory into folder dir (which it
	// makes), calls paused while the sandbox is still paused after that,
	// and resumes it (isolation.Sandbox.Checkpoint):
	// isolation.ErrCheckpointUnsupported where its runtime cannot,
	// *isolation.CheckpointRefusedError where the sandbox holds what
	// cannot be saved.
	Checkpoint(ctx context.Context, dir string, paused func() error) error
	// Hibernate saves the sandbox's memory into folder dir (which it
	// makes), calls saved while the sandbox is paused after that, and
	// the sandbox ends (the caller has let go of it first); if the
	// memory cannot be saved, or saved fails, it runs on.
	Hibernate(ctx context.Context, dir string, saved func() error) error
	// Exited is closed when the sandbox's init has exited; Exit then says
	// how.
	Exited() <-chan struct{}
	Exit() isolation.ExitInfo
	// Tmp is the host folder shown at /tmp; Started when it started;
	// StartTimings how long the steps of that start took.
	Tmp() string
	Started() time.Time
	StartTimings() isolation.Timings
}

// Executor runs code in the sandbox's agent, one execution at a time.
type Executor interface {
	// Exec runs code; a timeout, exception or kill is a result, an error
	// means the sandbox is out of step and must be restarted.
	Exec(ctx context.Context, o *isolation.ExecOptions, out isolation.Output) (*isolation.ExecResult, error)
	// Interrupt interrupts the execution under way (SIGINT, the kill after
	// its grace), from beside the Exec that waits for it, without waiting
	// for the execution: that Exec then answers status interrupted. It
	// reports whether an execution ran; isolation.ErrInterruptUnsupported
	// means the sandbox's agent is too old to be interrupted.
	Interrupt(ctx context.Context) (bool, error)
	// StartContext starts the interpreter of a code context in folder
	// cwd, afresh if it runs (the default one restarts), of language
	// (python or javascript), a copy of context from's if from is not
	// ""; DeleteContext stops one.
	// isolation.ErrContextUnsupported: the agent has one interpreter (an
	// older daemon started it).
	StartContext(ctx context.Context, name, cwd, from, language string) error
	DeleteContext(ctx context.Context, name string) error
	// Undo has context name's interpreter take back the copy the agent
	// parked steps executions ago (ExecOptions.Checkpoints), and answers
	// how many it went back; isolation.ErrContextUnsupported: the agent
	// is too old to keep copies.
	Undo(ctx context.Context, name string, steps int) (int, error)
}

// ProcessTable is the sandbox's processes beside its agent: started,
// listed and signalled by the sandbox's own pids (docker exec, top, kill).
type ProcessTable interface {
	// Spawn starts a process beside the agent, its streams the caller's
	// (an attached client's).
	Spawn(o *isolation.ProcessOptions) (*isolation.Process, error)
	// Processes lists its processes; Signal signals one (by the
	// sandbox's pid).
	Processes() ([]isolation.ProcessInfo, error)
	Signal(pid int, sig unix.Signal) error
}

// NetworkAccess is the host's way into the sandbox's network.
type NetworkAccess interface {
	// NetNS opens the sandbox's network namespace, for its network to be
	// plumbed in. DialPort connects to a TCP port on its loopback.
	NetNS() (*os.File, error)
	DialPort(ctx context.Context, port int) (net.Conn, error)
}

// Pin the implementation to the interface.
var _ Sandbox = (*isolation.Sandbox)(nil)

// libcontainerRuntime is isolation.Runtime as a Runtime: its Start and
// Restore return the concrete sandbox type.
type libcontainerRuntime struct{ *isolation.Runtime }

func (r libcontainerRuntime) Start(ctx context.Context, spec *isolation.Spec) (Sandbox, error) {
	sb, err := r.Runtime.Start(ctx, spec)
	if err != nil {
		return nil, err
	}
	return sb, nil
}

func (r libcontainerRuntime) Restore(ctx context.Context, spec *isolation.Spec) (Sandbox, error) {
	sb, err := r.Runtime.Restore(ctx, spec)
	if err != nil {
		return nil, err
	}
	return sb, nil
}

var _ Runtime = libcontainerRuntime{}
