// Package runsc runs sandboxes on gVisor: the same OCI spec, root view,
// workspace, limits and agent as runc's, run on gVisor's own kernel (the
// Sentry) instead of the host's. The daemon drives runsc's command line,
// as containerd's shim does: create, start, state, delete; a sandbox's
// processes are gVisor's, and the host sees only its sandbox process (and
// gofer), in the sandbox's cgroup. See docs/runsc.md.
//
// Package isolation builds the Sandbox around the container this
// package's engine starts (isolation.Engine, isolation.Container).
package runsc

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	ocgroups "github.com/opencontainers/cgroups"
	"github.com/opencontainers/runtime-spec/specs-go"

	"github.com/sandboxd/sandboxd/isolation"
	"github.com/sandboxd/sandboxd/seccomp"
)

// engine runs runsc sandboxes on Runtime r.
type engine struct {
	r  *isolation.Runtime
	rs *runsc
	// seccomp is the runtime's filter in the form runsc takes.
	seccomp *specs.LinuxSeccomp
}

// Pin the implementation to the seam.
var _ interface {
	isolation.Engine
	isolation.OwnKernel
	isolation.Checkpointer
} = (*engine)(nil)

// New is the runsc engine as o configures it, for isolation.Options's
// Engines; its error says why runsc cannot run sandboxes on this host.
func New(o Options) isolation.NewEngine {
	return func(r *isolation.Runtime) (isolation.Engine, error) {
		profile, err := seccomp.GvisorProfile(r.SeccompConfig())
		if err != nil {
			return nil, err
		}
		rs, err := newRunsc(o, r.StateDir())
		if err != nil {
			return nil, err
		}
		return &engine{r: r, rs: rs, seccomp: profile}, nil
	}
}

// CanCheckpoint: a runsc that checkpoints a sandbox left running, and
// whose sandboxes have gVisor's checkpoint file for the agent to wait on.
func (e *engine) CanCheckpoint() bool { return e.rs.checkpoints }

// OwnKernel: gVisor's Sentry is the sandbox's kernel, and its gofer opens
// the root view.
func (e *engine) OwnKernel() bool { return true }

// Info describes the runsc runtime.
func (e *engine) Info() isolation.RuntimeInfo {
	return isolation.RuntimeInfo{Name: isolation.RuntimeRunsc, Usable: true, Version: e.rs.version, Platform: e.rs.platform, Networks: e.rs.networks, NetworkAtStart: true}
}

// Start starts sandbox l with runsc: a bundle in its folder, runsc create
// and start. The agent makes its socket in l.AgentDir.
func (e *engine) Start(_ context.Context, l *isolation.Launch) (_ *isolation.Launched, retErr error) {
	rs, s := e.rs, l.Spec
	uid, gid := e.r.HostOwner(s.IDBase)
	if e.r.UserNS() {
		if err := searchable(l.Dir, s.Workspace); err != nil {
			return nil, err
		}
	}
	if err := os.Mkdir(l.AgentDir, 0o700); err != nil {
		return nil, err
	}
	if err := os.Chown(l.AgentDir, uid, gid); err != nil {
		return nil, err
	}
	spec := e.spec(l)
	b, err := json.Marshal(spec)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(l.Dir, "config.json"), b, 0o600); err != nil {
		return nil, err
	}
	// The daemon makes the sandbox's cgroup and sets its limits, as
	// libcontainer does for runc (the parents of a v1 cpuset need their
	// CPUs copied down), and starts runsc in it (startIn): runsc, told to
	// leave cgroups alone, forks its gofer and sandbox there.
	cg, err := e.cgroup(s.ID, spec.Linux.Resources)
	if err != nil {
		return nil, err
	}
	if err := cg.Apply(-1); err != nil {
		_ = cg.Destroy()
		return nil, fmt.Errorf("sandbox cgroup: %w", err)
	}
	release := isolation.LimitsGate()
	res := resourcesOf(cg)
	err = cg.Set(&res)
	release(err == nil)
	if err != nil {
		_ = cg.Destroy()
		return nil, fmt.Errorf("sandbox limits: %w", err)
	}
	pidFile := filepath.Join(l.Dir, "runsc.pid")
	t1 := time.Now()
	cctx, cancel := context.WithTimeout(context.Background(), runscTimeout)
	defer cancel()
	network := runscNetwork(s)
	create := rs.command(cctx, network, "create", "--bundle", l.Dir, "--pid-file", pidFile, s.ID)
	if s.Memory != "" {
		create = rs.restoreCommand(cctx, network, l.Dir, pidFile, s)
	}
	create.Stdout, create.Stderr = l.Log, l.Log
	defer func() {
		if retErr != nil {
			_ = rs.remove(s.ID, cg)
			_ = e.r.Cgroups().RemoveSandbox(s.ID)
		}
	}()
	err = startIn(create, cg)
	if err == nil {
		err = create.Wait()
	}
	if err != nil {
		return nil, fmt.Errorf("runsc create: %w%s", err, tailOf(l.LogPath))
	}
	c, err := e.container(s.ID, l.Dir, pidFile, cg, spec)
	if err != nil {
		return nil, err
	}
	if s.Memory != "" {
		return e.launched(l, c, t1, time.Now()), nil // restored: it runs
	}
	if _, err := rs.run(c.network, "start", s.ID); err != nil {
		c.close()
		return nil, err
	}
	return e.launched(l, c, t1, time.Now()), nil
}

// Restore takes back a runsc sandbox a previous daemon left running.
func (e *engine) Restore(l *isolation.Launch) (*isolation.Launched, error) {
	s := l.Spec
	b, err := os.ReadFile(filepath.Join(l.Dir, "config.json"))
	if err != nil {
		return nil, err
	}
	var spec specs.Spec
	if err := json.Unmarshal(b, &spec); err != nil {
		return nil, err
	}
	cg, err := e.cgroup(s.ID, spec.Linux.Resources)
	if err != nil {
		return nil, err
	}
	// A paused sandbox is thawed first: runsc's own commands talk to its
	// Sentry, which would not answer frozen (the caller freezes it again).
	if err := cg.Freeze(ocgroups.Thawed); err != nil {
		return nil, fmt.Errorf("thaw sandbox: %w", err)
	}
	// Paused in gVisor: a daemon was killed while it checkpointed the
	// sandbox (checkpoint.go), which it then would have resumed (by
	// runsc's commands, or through the control socket: resumeOwed).
	if st, err := e.rs.state(s.ID, specNetwork(&spec)); err == nil && st.Status == "paused" {
		if _, err := e.rs.run(specNetwork(&spec), "resume", s.ID); err != nil {
			return nil, err
		}
	}
	if err := e.rs.resumeOwed(s.ID, l.Dir); err != nil {
		return nil, err
	}
	c, err := e.container(s.ID, l.Dir, "", cg, &spec)
	if err != nil {
		return nil, err
	}
	if set := c.res.CpusetCpus; set != "" {
		e.r.AdoptCPUs(s.ID, set)
	}
	var started time.Time
	if fi, err := os.Stat(filepath.Join(l.Dir, "runsc.pid")); err == nil {
		started = fi.ModTime()
	}
	return e.launched(l, c, started, started), nil
}

// launched is container c of sandbox l. Its memory and pids limits hold
// inside from its start (the memory watch's mark, RLIMIT_NPROC); its end
// is its sandbox process's, watched through a pidfd: how it ended is not
// the daemon's to learn (not its child), but for memory.
func (e *engine) launched(l *isolation.Launch, c *gvisorContainer, prepared, started time.Time) *isolation.Launched {
	limits := l.Spec.Limits
	return &isolation.Launched{
		Container: c, Prepared: prepared, Started: started,
		AgentSocket:   filepath.Join(l.AgentDir, "agent.sock"),
		Inside:        &isolation.Limits{MemoryBytes: limits.MemoryBytes, Pids: limits.Pids},
		HostResources: gvisorResources,
		Begin: func(exited <-chan struct{}, reclaim func()) (func() *os.ProcessState, error) {
			if err := watchMemory(c.cg, limits.MemoryBytes, exited, reclaim); err != nil {
				c.close()
				return nil, err
			}
			fd, err := c.dupPidfd()
			return func() *os.ProcessState {
				if err == nil {
					isolation.WatchExit(fd)
				}
				return nil
			}, nil
		},
	}
}

// Cleanup ends what is left of runsc sandbox id and removes runsc's state
// of it (remove).
func (e *engine) Cleanup(id string) error {
	cg, err := e.cgroup(id, nil)
	if err != nil {
		return nil
	}
	return e.rs.remove(id, cg)
}

// Leftovers: runsc's state of a sandbox is in the sandbox's folder and
// cgroup, which the Runtime lists.
func (e *engine) Leftovers() ([]string, error) { return nil, nil }

// Close unmounts what runsc leaves in its root.
func (e *engine) Close() error { return e.rs.close() }
