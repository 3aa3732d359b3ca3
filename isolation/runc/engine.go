// Package runc runs sandboxes in runc's libcontainer: one container per
// session, with its own mount, pid, ipc, uts, cgroup and network
// namespaces, made from the OCI spec package isolation builds.
//
// Package isolation builds the Sandbox around the container this
// package's engine starts (isolation.Engine, isolation.Container).
package runc

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime/debug"
	"time"

	"github.com/opencontainers/runc/libcontainer"
	"github.com/opencontainers/runc/libcontainer/specconv"
	"golang.org/x/sys/unix"

	"github.com/sandboxd/sandboxd/isolation"
)

// engine runs libcontainer sandboxes on Runtime r, their state in lcRoot.
type engine struct {
	r      *isolation.Runtime
	lcRoot string
}

// Pin the implementation to the seam.
var _ isolation.Engine = (*engine)(nil)

// New is the runc engine, for isolation.Options's Engines.
func New(r *isolation.Runtime) (isolation.Engine, error) {
	e := &engine{r: r, lcRoot: filepath.Join(r.StateDir(), "runc")}
	if err := os.MkdirAll(e.lcRoot, 0o711); err != nil {
		return nil, err
	}
	return e, nil
}

// Info describes the runc runtime: always usable.
func (e *engine) Info() isolation.RuntimeInfo {
	return isolation.RuntimeInfo{Name: isolation.RuntimeRunc, Usable: true, Version: "libcontainer " + runcVersion(), Networks: true}
}

// Start starts sandbox l in a libcontainer container. The agent gets its
// listening socket from the daemon, made on the host.
func (e *engine) Start(_ context.Context, l *isolation.Launch) (*isolation.Launched, error) {
	s := l.Spec
	// The daemon makes the agent's listening sockets itself, on the host:
	// the sandbox inherits the listeners and never sees the files.
	lf, err := listenFile(l.Sock)
	if err != nil {
		return nil, fmt.Errorf("agent socket: %w", err)
	}
	defer lf.Close()
	sf, err := listenFile(l.SpawnSock)
	if err != nil {
		return nil, fmt.Errorf("agent socket: %w", err)
	}
	defer sf.Close()

	cfg, err := libcontainerConfig(&specconv.CreateOpts{CgroupName: s.ID, Spec: e.r.OCISpec(l)})
	if err != nil {
		return nil, fmt.Errorf("sandbox config: %w", err)
	}
	c, err := libcontainer.Create(e.lcRoot, s.ID, cfg)
	if err != nil {
		return nil, fmt.Errorf("create sandbox: %w", err)
	}
	prepared := time.Now()
	proc := &libcontainer.Process{
		Args:       l.Args,
		Env:        l.Env,
		UID:        e.r.UID(),
		GID:        e.r.GID(),
		Cwd:        s.User.HomeDir(),
		Stdout:     l.Log,
		Stderr:     l.Log,
		ExtraFiles: []*os.File{lf, sf}, // agent.ListenFD, agent.SpawnFD
		Init:       true,
	}
	release := isolation.LimitsGate()
	err = c.Run(proc)
	release(err == nil)
	// The sandbox has its mounts now: the host lets go of its copies (if
	// that fails, destroy tries again).
	_ = l.UnmountView()
	if err != nil {
		_ = c.Destroy()
		return nil, fmt.Errorf("start sandbox: %w", err)
	}
	started := time.Now()
	// Init's exit is awaited through a pidfd in Go's poller, and only then
	// reaped: a goroutine blocked in waitid holds an OS thread, and a
	// thousand idle sessions held a thousand threads. The pid stays ours
	// until the reap.
	pidfd := -1
	if pid, err := proc.Pid(); err == nil {
		if fd, err := unix.PidfdOpen(pid, unix.PIDFD_NONBLOCK); err == nil {
			pidfd = fd
		}
	}
	wait := func() *os.ProcessState {
		if pidfd >= 0 {
			isolation.WatchExit(pidfd)
		}
		// libcontainer's parent must reap init, even after Destroy.
		ps, _ := proc.Wait()
		return ps
	}
	return &isolation.Launched{Container: newRuncContainer(c), Prepared: prepared, Started: started, Begin: begin(wait)}, nil
}

// begin is a Launched.Begin that only waits: a runc sandbox's cgroup
// keeps its limits, and the kernel's OOM killer acts on them.
func begin(wait func() *os.ProcessState) func(<-chan struct{}, func()) (func() *os.ProcessState, error) {
	return func(<-chan struct{}, func()) (func() *os.ProcessState, error) { return wait, nil }
}

// Restore takes back a libcontainer sandbox a previous daemon left
// running: its init is watched through a pidfd, since this daemon is not
// its parent.
func (e *engine) Restore(l *isolation.Launch) (*isolation.Launched, error) {
	s := l.Spec
	c, err := libcontainer.Load(e.lcRoot, s.ID)
	if err != nil {
		return nil, err
	}
	if st, err := c.Status(); err == nil && st == libcontainer.Paused {
		if err := c.Resume(); err != nil {
			return nil, fmt.Errorf("thaw sandbox: %w", err)
		}
	}
	if st, err := c.Status(); err != nil || st != libcontainer.Running {
		return nil, fmt.Errorf("sandbox is %v (%v)", st, err)
	}
	state, err := c.State()
	if err != nil {
		return nil, err
	}
	pidfd, err := unix.PidfdOpen(state.InitProcessPid, unix.PIDFD_NONBLOCK)
	if err != nil {
		return nil, fmt.Errorf("watch sandbox init %d: %w", state.InitProcessPid, err)
	}
	// Status checked the pid's start time; check again now that the pidfd
	// pins the process, so it is surely the sandbox's init.
	if st, err := c.Status(); err != nil || st != libcontainer.Running {
		unix.Close(pidfd)
		return nil, fmt.Errorf("sandbox stopped while being restored (%v)", err)
	}
	if cg := c.Config().Cgroups; cg != nil && cg.Resources != nil {
		e.r.AdoptCPUs(s.ID, cg.Resources.CpusetCpus)
	}
	wait := func() *os.ProcessState {
		isolation.WatchExit(pidfd)
		return nil // not our child: how it ended is unknown, but for memory
	}
	return &isolation.Launched{Container: newRuncContainer(c), Started: state.Created, Begin: begin(wait)}, nil
}

// Cleanup kills what is left of sandbox id's container and removes its
// libcontainer state — also the half of a start cut short, which
// libcontainer cannot load.
func (e *engine) Cleanup(id string) error {
	var errs []error
	if c, err := libcontainer.Load(e.lcRoot, id); err == nil {
		if err := c.Signal(unix.SIGKILL); err != nil && !errors.Is(err, libcontainer.ErrNotRunning) {
			errs = append(errs, err)
		}
		for i := 0; i < 100; i++ {
			if st, err := c.Status(); err != nil || st == libcontainer.Stopped {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		errs = append(errs, isolation.RetryBusy(c.Destroy))
	}
	return errors.Join(append(errs, os.RemoveAll(filepath.Join(e.lcRoot, id)))...)
}

// Leftovers are the sandboxes libcontainer has state of.
func (e *engine) Leftovers() ([]string, error) {
	ents, err := os.ReadDir(e.lcRoot)
	if err != nil && !os.IsNotExist(err) {
		return nil, err
	}
	var ids []string
	for _, d := range ents {
		if d.IsDir() {
			ids = append(ids, d.Name())
		}
	}
	return ids, nil
}

// Close: libcontainer holds nothing between calls.
func (e *engine) Close() error { return nil }

// runcVersion is the version of runc's libcontainer built in.
func runcVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, m := range bi.Deps {
			if m.Path == "github.com/opencontainers/runc" {
				return m.Version
			}
		}
	}
	return "unknown"
}

// listenFile is a listening Unix socket at path, as a file to pass on.
func listenFile(path string) (*os.File, error) {
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return nil, err
	}
	ln.SetUnlinkOnClose(false)
	f, err := ln.File()
	ln.Close()
	return f, err
}
