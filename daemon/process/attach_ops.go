package process

import (
	"context"
	"strings"
	"time"

	"github.com/containerd/errdefs"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/internal/logging"
	"github.com/sandboxd/sandboxd/isolation"
)

// The API's calls on attached processes (attached.go).

// startAttached starts req as an attached process of t.
func (m *Manager) startAttached(ctx context.Context, t *Target, sb Sandbox, req *api.ProcessRequest, cwd string) (*api.Process, error) {
	if req.TimeoutS < 0 {
		return nil, errdefs.ErrInvalidArgument.WithMessage("timeout_s must be 0 (none) or more")
	}
	if req.TTY != nil && (req.TTY.Rows == 0 || req.TTY.Cols == 0) {
		return nil, errdefs.ErrInvalidArgument.WithMessage("tty needs rows and cols above 0")
	}
	if len(req.Tag) > 256 {
		return nil, errdefs.ErrInvalidArgument.WithMessage("a tag is at most 256 bytes")
	}
	env := t.Env(req.Env)
	if err := CheckExecSize(req.Argv, env); err != nil {
		return nil, err
	}
	o := &isolation.ProcessOptions{Argv: req.Argv, Env: env, Cwd: cwd}
	if req.TTY != nil {
		o.TTY, o.Rows, o.Cols = true, req.TTY.Rows, req.TTY.Cols
	}
	p, err := sb.Spawn(o)
	if err != nil {
		return nil, api.Errorf(errdefs.ErrInvalidArgument, "cannot run %s: %v", api.Quote(req.Argv[0]), err)
	}
	if p.PID() <= 0 {
		// Nothing could name it: it is not left running unreachable.
		_ = p.Kill()
		_, _ = p.Wait()
		p.Close()
		return nil, api.Errorf(errdefs.ErrUnavailable, "started %s, but the sandbox did not say its pid: it was killed", api.Quote(req.Argv[0]))
	}
	info := api.Process{PID: p.PID(), Command: strings.Join(req.Argv, " "), StartedAt: m.o.Now(), Attached: true,
		Argv: req.Argv, Env: req.Env, Cwd: cwd, Tag: req.Tag, TTY: req.TTY}
	a := newAttached(info, p)
	if !t.Book.attach(a) {
		_ = p.Kill()
		_, _ = p.Wait()
		p.Close()
		return nil, api.Errorf(errdefs.ErrResourceExhausted, "session %s runs %d attached processes already: end one first", t.ID, maxAttached)
	}
	log := logging.From(ctx).With("session", sb.ID())
	log.Info("attached process started", "pid", info.PID, "argv0", req.Argv[0], "tag", req.Tag)
	var timer *time.Timer
	if req.TimeoutS > 0 {
		timer = time.AfterFunc(time.Duration(req.TimeoutS*float64(time.Second)), func() {
			log.Info("attached process killed at its timeout", "pid", info.PID, "timeout_s", req.TimeoutS)
			_ = p.Kill()
		})
	}
	// A request's context ends with it: the process outlives it.
	go a.pump(func(code int) {
		if timer != nil {
			timer.Stop()
		}
		log.Info("attached process ended", "pid", info.PID, "exit_code", code)
	})
	out := a.snapshot()
	return &out, nil
}

// findAttached is session id's attached process pid, as the caller
// reaches it.
func (m *Manager) findAttached(ctx context.Context, id string, pid int) (*Target, *attached, error) {
	t, err := m.o.Find(ctx, id, true)
	if err != nil {
		return nil, nil, err
	}
	a := t.Book.findAttached(pid, "")
	if a == nil {
		return nil, nil, api.Errorf(errdefs.ErrNotFound, "no attached process %d in session %s: only a process started with stdin or a tty takes input and streams its output", pid, t.ID)
	}
	return t, a, nil
}

// WriteStdin sends input to an attached process; eof closes its input
// after.
func (m *Manager) WriteStdin(ctx context.Context, id string, pid int, b []byte, eof bool) error {
	_, a, err := m.findAttached(ctx, id, pid)
	if err != nil {
		return err
	}
	switch err := a.write(b, eof); err {
	case nil:
		return nil
	case errEnded, errStdinClosed, errNoStdin:
		return api.Errorf(errdefs.ErrConflict, "process %d: %v", pid, err)
	default:
		return api.Errorf(errdefs.ErrConflict, "process %d: its input: %v", pid, err)
	}
}

// ResizeProcess sets an attached process's terminal size.
func (m *Manager) ResizeProcess(ctx context.Context, id string, pid int, size api.TermSize) error {
	if size.Rows == 0 || size.Cols == 0 {
		return errdefs.ErrInvalidArgument.WithMessage("rows and cols must be above 0")
	}
	_, a, err := m.findAttached(ctx, id, pid)
	if err != nil {
		return err
	}
	if a.info.TTY == nil {
		return api.Errorf(errdefs.ErrConflict, "process %d has no terminal to resize", pid)
	}
	if !a.running() {
		return api.Errorf(errdefs.ErrConflict, "process %d: %v", pid, errEnded)
	}
	return a.p.Resize(size.Rows, size.Cols)
}

// ProcessOutput sends an attached process's output from from (FromStart,
// FromNow or a byte offset): what is kept, then with follow what comes
// until it ends (its exit code last) or ctx ends. opened is called first,
// once the process is found.
func (m *Manager) ProcessOutput(ctx context.Context, id string, pid int, from int64, follow bool, opened func(), send func(api.ProcessOutput) error) error {
	_, a, err := m.findAttached(ctx, id, pid)
	if err != nil {
		return err
	}
	opened()
	return a.follow(ctx, from, follow, send)
}
