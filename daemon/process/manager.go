package process

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/containerd/errdefs"
	"golang.org/x/sys/unix"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/daemon/sandboxfs"
	"github.com/sandboxd/sandboxd/internal/logging"
	"github.com/sandboxd/sandboxd/isolation"
)

// Background processes (exec --detach): a command that outlives its call,
// in the sandbox's cgroup (its pids limit counts it) until it exits or the
// session stops. Its stdout and stderr go to a file in the sandbox's /tmp
// (on the session's disk, so its quota bounds it), named by its pid, which
// the daemon serves; the process holds the file itself, so a daemon
// restart does not cut its output.

// logsDir is where background processes' output goes, under /tmp.
const logsDir = ".sandboxd/logs"

// seq names a log file until its process's pid is known.
var seq atomic.Uint64

// Sandbox is a session's sandbox as its processes see it (the daemon's
// ProcessTable role).
type Sandbox interface {
	ID() string
	Spawn(o *isolation.ProcessOptions) (*isolation.Process, error)
	Processes() ([]isolation.ProcessInfo, error)
	Signal(pid int, sig unix.Signal) error
}

// Target is a session as the caller reaches it.
type Target struct {
	ID string
	// Sandbox is nil when the session does not run.
	Sandbox Sandbox
	// FS is its files; Book what its daemon knows of its background
	// processes.
	FS   *sandboxfs.FS
	Book *Book
	// Cwd, if set, is the folder a command starts in given the request's
	// as Options.Check left it ("": the session's home); nil: /workspace.
	Cwd func(cwd string) (string, error)
	// Env is the environment of a command given req's variables: the
	// session's, with req's over it.
	Env func(req map[string]string) []string
}

// Options are what the daemon gives the processes' owner.
type Options struct {
	// Find is session id as the caller in ctx may reach it; awake resumes
	// a paused one first.
	Find func(ctx context.Context, id string, awake bool) (*Target, error)
	// Check checks a command to run as is (its arguments, environment and
	// working folder, the daemon's rules) and says its working folder.
	Check func(argv []string, env map[string]string, cwd string) (string, error)
	// Now is the time a process is said to start.
	Now func() time.Time
}

// Manager serves the API's processes (server.ProcessBackend, by shape).
type Manager struct{ o Options }

// NewManager is the processes' owner.
func NewManager(o Options) *Manager { return &Manager{o: o} }

// running is the target's sandbox, or the API's conflict.
func running(t *Target, why string) (Sandbox, error) {
	if t.Sandbox == nil {
		return nil, api.Errorf(errdefs.ErrConflict, "session %s is not running%s", t.ID, why)
	}
	return t.Sandbox, nil
}

// StartProcess starts a command in the background.
func (m *Manager) StartProcess(ctx context.Context, id string, req *api.ProcessRequest) (*api.Process, error) {
	cwd, err := m.o.Check(req.Argv, req.Env, req.Cwd)
	if err != nil {
		return nil, err
	}
	t, err := m.o.Find(ctx, id, true)
	if err != nil {
		return nil, err
	}
	if t.Cwd != nil {
		if cwd, err = t.Cwd(cwd); err != nil {
			return nil, err
		}
	} else if cwd == "" {
		cwd = "/workspace"
	}
	sb, err := running(t, ": start it first")
	if err != nil {
		return nil, err
	}
	if req.Stdin || req.TTY != nil {
		return m.startAttached(ctx, t, sb, req, cwd)
	}
	tmpName := fmt.Sprintf("%s/.starting-%d.log", logsDir, seq.Add(1))
	out, err := t.FS.Create(sandboxfs.Tmp, tmpName)
	if err != nil {
		return nil, err
	}
	defer out.Close() // the process has its own copy
	env := t.Env(req.Env)
	// With the session's environment too: a background command that
	// cannot be exec'd would only exit 255 later, with nothing in its log.
	if err := CheckExecSize(req.Argv, env); err != nil {
		_ = t.FS.Remove(sandboxfs.Tmp, tmpName)
		return nil, err
	}
	p, err := sb.Spawn(&isolation.ProcessOptions{Argv: req.Argv, Env: env, Cwd: cwd, Output: out})
	if err != nil {
		_ = t.FS.Remove(sandboxfs.Tmp, tmpName)
		return nil, api.Errorf(errdefs.ErrInvalidArgument, "cannot run %s: %v", api.Quote(req.Argv[0]), err)
	}
	pid := p.PID()
	if pid > 0 {
		_ = t.FS.Rename(sandboxfs.Tmp, tmpName, strconv.Itoa(pid)+".log")
	}
	e := t.Book.add(pid)
	log := logging.From(ctx).With("session", sb.ID())
	log.Info("process started in the background", "pid", pid, "argv0", req.Argv[0])
	// Its end is noted (this daemon's child); one that outlives the
	// daemon is the next one's to see in the process list.
	go func() {
		code, _ := p.Wait()
		t.Book.ended(e, code)
		log.Info("background process ended", "pid", pid, "exit_code", code)
	}()
	return &api.Process{PID: pid, Command: strings.Join(req.Argv, " "), StartedAt: m.o.Now(), Detached: true}, nil
}

// Processes lists a session's processes (its agent, pid 1, included).
func (m *Manager) Processes(ctx context.Context, id string) ([]api.Process, error) {
	t, err := m.o.Find(ctx, id, false)
	if err != nil {
		return nil, err
	}
	sb, err := running(t, ": it has no processes")
	if err != nil {
		return nil, err
	}
	ps, err := sb.Processes()
	if err != nil {
		return nil, err
	}
	att := map[int]api.Process{}
	for _, a := range t.Book.attachedList() {
		if a.running() {
			att[a.info.PID] = a.snapshot()
		}
	}
	out := make([]api.Process, 0, len(ps))
	for _, p := range ps {
		detached, _ := t.Book.lookup(p.PID)
		ap := api.Process{PID: p.PID, PPID: p.PPID, Command: p.Command, StartedAt: p.StartedAt,
			CPUSeconds: p.CPUSeconds, RSSBytes: p.RSSBytes, Detached: detached}
		if a, ok := att[p.PID]; ok {
			ap.Attached, ap.Argv, ap.Env, ap.Cwd, ap.Tag, ap.TTY = true, a.Argv, a.Env, a.Cwd, a.Tag, a.TTY
		}
		out = append(out, ap)
	}
	return out, nil
}

// SignalProcess sends a signal ("TERM", "KILL", "INT", "HUP", a number) to
// a session's process; its agent (pid 1) is refused.
func (m *Manager) SignalProcess(ctx context.Context, id string, pid int, signal string) error {
	sig, err := ParseSignal(signal)
	if err != nil {
		return err
	}
	if pid == 1 {
		return errdefs.ErrInvalidArgument.WithMessage("pid 1 is the sandbox's agent: stop or restart the session instead")
	}
	t, err := m.o.Find(ctx, id, true)
	if err != nil {
		return err
	}
	sb, err := running(t, "")
	if err != nil {
		return err
	}
	err = sb.Signal(pid, sig)
	if errors.Is(err, isolation.ErrNoProcess) {
		return api.Errorf(errdefs.ErrNotFound, "no process %d in session %s", pid, t.ID)
	}
	return err
}

// ProcessLogs opens a background process's output from offset, and says
// whether it still runs (false also when this daemon did not start it and
// it is gone from the sandbox).
func (m *Manager) ProcessLogs(ctx context.Context, id string, pid int, offset int64) (io.ReadCloser, bool, *int, error) {
	t, err := m.o.Find(ctx, id, false)
	if err != nil {
		return nil, false, nil, err
	}
	sb, err := running(t, ": its processes' output went with its /tmp")
	if err != nil {
		return nil, false, nil, err
	}
	f, err := t.FS.Open(sandboxfs.Tmp, fmt.Sprintf("%s/%d.log", logsDir, pid))
	if err != nil {
		if errdefs.IsNotFound(err) {
			return nil, false, nil, api.Errorf(errdefs.ErrNotFound, "no output of process %d in session %s: it was not started in the background (exec --detach)", pid, t.ID)
		}
		return nil, false, nil, err
	}
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		f.Close()
		return nil, false, nil, api.Errorf(errdefs.ErrNotFound, "no output of process %d", pid)
	}
	if offset > 0 {
		if _, err := f.Seek(offset, io.SeekStart); err != nil {
			f.Close()
			return nil, false, nil, err
		}
	}
	started, exit := t.Book.lookup(pid)
	// One this daemon started runs until its Wait returns; another (from
	// before a restart) runs while the sandbox lists it.
	isRunning := started && exit == nil
	if !started {
		if ps, err := sb.Processes(); err == nil {
			for _, p := range ps {
				isRunning = isRunning || p.PID == pid
			}
		}
	}
	return f, isRunning, exit, nil
}
