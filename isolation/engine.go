package isolation

import (
	"context"
	"fmt"
	"os"
	"path"
	"time"

	"github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"

	"github.com/sandboxd/sandboxd/cgroups"
	"github.com/sandboxd/sandboxd/isolation/agent"
	"github.com/sandboxd/sandboxd/seccomp"
)

// Engine runs the containers of one runtime: runc's libcontainer (package
// isolation/runc) or gVisor's runsc (package isolation/runsc). The
// Runtime does what is the same for both — the root view, /tmp, the
// agent's connection, executions, limits, meters, leftovers — and asks the
// engine of a Spec's runtime for its container, as containerd's core asks
// a runtime shim (core/runtime.PlatformRuntime). Engines are handed to
// NewRuntime (Options.Engines), so that this package imports neither.
type Engine interface {
	// Info says whether the engine can run sandboxes here, and why not.
	Info() RuntimeInfo
	// Start starts the container of a sandbox whose view is ready (l),
	// its first process the agent.
	Start(ctx context.Context, l *Launch) (*Launched, error)
	// Restore takes back the container of a sandbox a previous daemon
	// left running (l has no View nor Log), thawed if it was frozen.
	Restore(l *Launch) (*Launched, error)
	// Cleanup removes what the engine may have left of sandbox id after a
	// daemon that did not stop it: its processes and runtime state.
	Cleanup(id string) error
	// Leftovers are the ids of the sandboxes the engine has state of.
	Leftovers() ([]string, error)
	// Close lets go of what the engine holds; sandboxes keep running.
	Close() error
}

// OwnKernel is an engine whose sandboxes run on a kernel of their own
// (gVisor's Sentry, runsc): their /proc and devices are that kernel's (no
// lxcfs files), and a gofer of the engine's opens the root view, which it
// remounts read-only in the sandbox's user namespace (so the view's root
// has no flags the host's kernel would lock) and which has a mount point
// for the agent's folder (Launch.AgentDirMount).
type OwnKernel interface {
	OwnKernel() bool
}

// ownKernel says engine e is an OwnKernel one.
func ownKernel(e Engine) bool {
	k, ok := e.(OwnKernel)
	return ok && k.OwnKernel()
}

// NewEngine makes an engine on Runtime r, once r's shared parts are
// ready. An error says why the engine cannot run sandboxes here: the
// Runtime reports it (Info) and refuses the runtime's sandboxes.
type NewEngine func(r *Runtime) (Engine, error)

// Launch is one sandbox as the Runtime hands it to its engine.
type Launch struct {
	Spec *Spec
	// View is the image as the sandbox sees it, mounted in its folder.
	View *Image
	// Args and Env are the agent's command and environment.
	Args, Env []string
	// Dir is the sandbox's folder; Sock where the daemon makes the
	// agent's listening socket (runc); AgentDir the folder an agent that
	// makes its own socket makes it in, bound at AgentDir inside (runsc);
	// SpawnSock where the daemon makes the agent's listener for
	// processes (runc; spawn.go); LogPath the agent's log, which Log
	// appends to.
	Dir, Sock, AgentDir, SpawnSock, LogPath string
	Log                                     *os.File

	p *paths
	// ownKernel is the engine's OwnKernel.
	ownKernel bool
}

// launch is sandbox s in folders p, without a view yet.
func (r *Runtime) launch(s *Spec, p *paths, e Engine) *Launch {
	return &Launch{Spec: s, Dir: p.dir, Sock: p.sock, AgentDir: p.agent, SpawnSock: p.spawnPath(), LogPath: p.log, p: p, ownKernel: ownKernel(e)}
}

// UnmountView lets go of the host's mounts of the sandbox's view, once
// its container has its own.
func (l *Launch) UnmountView() error { return unmountView(l.p) }

// Launched is the container an engine started or restored.
type Launched struct {
	Container Container
	// Prepared is when the engine had its configuration ready (the end
	// of Timings.Prepare); Started when the first process started.
	Prepared, Started time.Time
	// AgentSocket is where the agent listens, if not Launch.Sock.
	AgentSocket string
	// Inside are the memory and pids limits the container keeps inside,
	// fixed at its start (runsc: the memory mark, RLIMIT_NPROC); nil when
	// its cgroup keeps them. HostResources, if set, are the cgroup's
	// resources for limits l (with room for the runtime's own).
	Inside        *Limits
	HostResources func(l Limits) *specs.LinuxResources
	// Begin starts watching the container once the Sandbox around it is
	// made: exited closes once the container's first process has exited,
	// and reclaim has the agent kill the process with the most memory. It
	// returns wait, which returns once that process has exited, with how
	// (nil: unknown); the Sandbox calls it in a goroutine of its own.
	Begin func(exited <-chan struct{}, reclaim func()) (wait func() *os.ProcessState, err error)
}

// The Runtime's shared parts an engine builds on.

// StateDir is the runtime's state folder, under which an engine keeps
// its own.
func (r *Runtime) StateDir() string { return r.stateDir }

// UserNS says sandboxes get a user namespace (Options.UserNS).
func (r *Runtime) UserNS() bool { return r.userns }

// SeccompConfig is the operator's change to the default filter.
func (r *Runtime) SeccompConfig() seccomp.Config { return r.seccompConfig }

// Cgroups is where sandbox cgroups go.
func (r *Runtime) Cgroups() *cgroups.Tree { return r.cgroups }

// AdoptCPUs records the cpuset a restored sandbox has (cpuset.go).
func (r *Runtime) AdoptCPUs(id, set string) { r.cpus.adopt(id, set) }

// OCISpec is the OCI spec of sandbox l, for either runtime.
func (r *Runtime) OCISpec(l *Launch) *specs.Spec { return r.ociSpec(l.Spec, l.p, l.View, l.ownKernel) }

// engine is the engine of runtime name (runc for any but runsc), if it
// can run sandboxes here.
func (r *Runtime) engine(name string) (Engine, error) {
	if name != RuntimeRunsc {
		name = RuntimeRunc
	}
	e, ok := r.engines[name]
	if !ok {
		return nil, fmt.Errorf("%s is not usable on this host: %s", name, r.problems[name])
	}
	return e, nil
}

// WatchExit returns when the process of pidfd exits, and closes pidfd.
// The pidfd joins Go's poller: a waiting sandbox costs no thread.
func WatchExit(pidfd int) {
	f := os.NewFile(uintptr(pidfd), "pidfd")
	defer f.Close()
	rc, err := f.SyscallConn()
	if err != nil {
		return
	}
	_ = rc.Read(func(fd uintptr) bool {
		n, err := unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, 0)
		return n > 0 || (err != nil && err != unix.EINTR)
	})
}

// agentDir is where an agent that makes its own socket (runsc's) makes
// it: a folder of the host's, bound from Launch.AgentDir, so the daemon
// can connect to it (runsc passes no inherited listener).
var agentDir = path.Dir(agent.ListenPath)

// AgentDirMount is the mount of the sandbox's agent folder at agentDir,
// for an engine whose agent makes its own socket.
func (l *Launch) AgentDirMount() specs.Mount {
	return specs.Mount{Destination: agentDir, Type: "bind", Source: l.AgentDir, Options: bindRW}
}
