package daemon

import (
	"context"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/containerd/errdefs"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/daemon/config"
	"github.com/sandboxd/sandboxd/daemon/execution"
	"github.com/sandboxd/sandboxd/daemon/sandboxfs"
	"github.com/sandboxd/sandboxd/internal/logging"
)

// maxCodeBytes bounds the code of one execution.
const maxCodeBytes = 8 << 20

// Exec runs code in a session and records the execution. onEvent, if not
// nil, gets each piece of output as the code produces it. A timeout, an
// exception or a kill is an Execution with that status, not an error.
func (d *Daemon) Exec(ctx context.Context, id string, req *api.ExecRequest, onEvent func(api.Event)) (*api.Execution, error) {
	s, err := d.lookup(ctx, id)
	if err != nil {
		return nil, err
	}
	x, err := d.claimForExec(ctx, s, req)
	if err != nil {
		return nil, err
	}
	defer x.release()
	e, out := d.execs.Start(x.sb.ID(), callerFrom(ctx).UID, req, onEvent)
	return d.execs.Run(s, e, out, func() *api.Execution { return d.execs.Exec(ctx, x.run, e, out, req) }), nil
}

// StartExec starts code in a session and answers its execution's id at
// once (exec with wait false); the execution runs on, detached from the
// request, and is recorded as Exec's are. What Exec refuses, it refuses.
func (d *Daemon) StartExec(ctx context.Context, id string, req *api.ExecRequest) (string, error) {
	s, err := d.lookup(ctx, id)
	if err != nil {
		return "", err
	}
	x, err := d.claimForExec(ctx, s, req)
	if err != nil {
		return "", err
	}
	e, out := d.execs.Start(x.sb.ID(), callerFrom(ctx).UID, req, nil)
	// Live before its id is answered: a GET of it right after must find
	// it (the JS SDK's suite, on a loaded host, asked before the
	// goroutine below had run and got 404).
	s.live.Add(e, out)
	ctx = context.WithoutCancel(ctx)
	if !d.execs.Runs.Go(func() {
		defer x.release()
		d.execs.Run(s, e, out, func() *api.Execution { return d.execs.Exec(ctx, x.run, e, out, req) })
	}) {
		s.live.Drop(e.ID)
		x.release()
		return "", errdefs.ErrUnavailable.WithMessage("sandboxd is shutting down: try again once it is back")
	}
	return e.ID, nil
}

// checkExec checks an execution request; defTimeoutS is the session's.
func checkExec(c *config.Config, req *api.ExecRequest, defTimeoutS int) (time.Duration, error) {
	switch req.Language {
	case api.LanguagePython, api.LanguageShell, api.LanguageJavaScript:
	case "":
		return 0, errdefs.ErrInvalidArgument.WithMessage(`language is required: "python", "shell" or "javascript"`)
	default:
		return 0, api.Errorf(errdefs.ErrInvalidArgument, `language %s is not supported: use "python", "shell" or "javascript"`, api.Quote(req.Language))
	}
	if len(req.Code) > maxCodeBytes {
		return 0, api.Errorf(api.ErrPayloadTooLarge, "the code is %d bytes, over the limit of %d", len(req.Code), maxCodeBytes)
	}
	if err := checkEnv(req.Env); err != nil {
		return 0, err
	}
	// The agent hands code to sh -c or compile(): neither takes a NUL.
	if strings.IndexByte(req.Code, 0) >= 0 {
		return 0, errdefs.ErrInvalidArgument.WithMessage("the code contains a NUL byte: send text")
	}
	if req.Cwd != "" && !deferredCwd(req.Cwd) { // one under /home: claimForExec
		cwd, err := sandboxfs.Cwd(req.Cwd)
		if err != nil {
			return 0, err
		}
		req.Cwd = cwd
	}
	timeout := float64(defTimeoutS)
	if req.TimeoutS != nil {
		t := *req.TimeoutS
		if math.IsNaN(t) || t <= 0 || t > float64(c.Max.TimeoutS) {
			return 0, api.Errorf(errdefs.ErrInvalidArgument, "timeout_s is %v: it must be above 0 and at most %d", t, c.Max.TimeoutS)
		}
		timeout = t
	}
	return time.Duration(timeout * float64(time.Second)), nil
}

// exec runs code in a session without recording it: the daemon's own
// work (package installs' follow-ups, template builds) and one-shot runs.
func (d *Daemon) exec(ctx context.Context, s *session, req *api.ExecRequest, onEvent func(api.Event)) (*api.Execution, error) {
	x, err := d.claimForExec(ctx, s, req)
	if err != nil {
		return nil, err
	}
	defer x.release()
	e, out := d.execs.Start(x.sb.ID(), callerFrom(ctx).UID, req, onEvent)
	return d.execs.Exec(ctx, x.run, e, out, req), nil
}

// execSlot is a session claimed for one execution: one of the host's
// execution slots is held and the session counts it busy until release.
type execSlot struct {
	s       *session
	sb      Sandbox
	run     *execution.Run
	release func()
}

// claimForExec checks req and claims s for it, resuming it if paused.
func (d *Daemon) claimForExec(ctx context.Context, s *session, req *api.ExecRequest) (*execSlot, error) {
	rec := s.Snapshot()
	defTimeout, sessionEnv := rec.Limits.TimeoutS, rec.Env
	timeout, err := checkExec(&d.cfg, req, defTimeout)
	if err != nil {
		return nil, err
	}
	if req.Cwd != "" {
		// None stays none: the interpreter's own folder, which code may
		// have changed (it starts in the home).
		if req.Cwd, err = cwdOf(d.tmpl, s, req.Cwd); err != nil {
			return nil, err
		}
	}
	cx, err := execContext(rec, req)
	if err != nil {
		return nil, err
	}
	if err := d.execs.Slots.Take(); err != nil {
		return nil, err
	}
	sb, reset, err := d.claimAwake(ctx, s)
	if err != nil {
		d.execs.Slots.Release()
		return nil, err
	}
	run := &execution.Run{Sandbox: sb, Timeout: timeout, Env: mergeEnv(sessionEnv, req.Env), Reset: reset,
		Context: cx.ID, ContextCwd: cx.Cwd,
		Lost:   func(ctx context.Context, e *api.Execution, cause error) { d.recoverExec(ctx, s, sb, e, cause) },
		Killed: func() { d.journal.noticeOOM(s, sb) }}
	release := func() { s.ReleaseExec(); d.execs.Slots.Release() }
	if rec.Checkpoints > 0 {
		// The state before it, for undo: /workspace's checkpoint now, the
		// interpreter's copy parked by the agent.
		done, err := d.State().Undo.before(ctx, s, cx.ID, req.Language, rec.Checkpoints)
		if err != nil {
			release()
			return nil, err
		}
		var once sync.Once
		recorded := func(parked bool) { once.Do(func() { done(parked) }) }
		run.Checkpoints, run.Parked = rec.Checkpoints, recorded
		free := release
		release = func() { recorded(false); free() }
	}
	return &execSlot{s: s, sb: sb, run: run, release: release}, nil
}

// recoverExec handles an execution whose sandbox stopped answering or died
// under it: the sandbox is replaced (state_reset; execution.Lost says so
// in e). The replacement does not depend on the request: a
// client that hangs up does not leave the session broken.
func (d *Daemon) recoverExec(ctx context.Context, s *session, sb Sandbox, e *api.Execution, cause error) {
	log := logging.From(ctx)
	// The watcher may have seen the sandbox die first and failed the
	// session; else the sandbox is still the session's and goes now.
	if !s.Lost(sb) || !d.sessions.has(s) {
		// Stopped, restarted or deleted while running: nothing to bring
		// back.
		e.Error.Value = "the session was stopped while the code ran"
		return
	}
	if !s.TryBegin(opStart) {
		return // someone else is restarting or stopping it
	}
	defer s.End()
	log.Warn("sandbox lost during an execution; restarting it", "session", e.SessionID, "err", cause)
	// Stopped here, or by the exit watcher that saw it die first: a
	// second Stop returns once the first has removed it, so the new
	// sandbox never starts over the old one's folder and cgroup.
	s.SetExited(sb, "the sandbox stopped answering during an execution")
	_ = sb.Stop()
	if err := d.restartSandbox(repairCtx(ctx), s, api.ActionRestarted, "the sandbox was lost during an execution"); err != nil {
		log.Error("restart sandbox", "session", e.SessionID, "err", err)
	}
}

// mergeEnv is the environment of one execution: the session's, which a
// sandbox from the warm pool did not start with, then the request's.
func mergeEnv(session []string, req map[string]string) map[string]string {
	if len(session) == 0 {
		return req
	}
	out := make(map[string]string, len(session)+len(req))
	for _, kv := range session {
		if k, v, ok := strings.Cut(kv, "="); ok {
			out[k] = v
		}
	}
	for k, v := range req {
		out[k] = v
	}
	return out
}
