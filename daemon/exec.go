package daemon

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/containerd/errdefs"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/daemon/config"
	"github.com/sandboxd/sandboxd/daemon/sandboxfs"
	"github.com/sandboxd/sandboxd/internal/logging"
	"github.com/sandboxd/sandboxd/isolation"
	"github.com/sandboxd/sandboxd/store"
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
	e, out := d.newExecution(ctx, x, req, onEvent)
	return d.execRecorded(ctx, x, e, out, req), nil
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
	e, out := d.newExecution(ctx, x, req, nil)
	// Live before its id is answered: a GET of it right after must find
	// it (the JS SDK's suite, on a loaded host, asked before the
	// goroutine below had run and got 404).
	s.addLive(e, out)
	ctx = context.WithoutCancel(ctx)
	if !d.detached.Go(func() {
		defer x.release()
		d.execRecorded(ctx, x, e, out, req)
	}) {
		s.dropLive(e.ID)
		x.release()
		return "", errdefs.ErrUnavailable.WithMessage("sandboxd is shutting down: try again once it is back")
	}
	return e.ID, nil
}

// execRecorded runs a claimed execution that the session's history keeps:
// GET …/executions/{eid} finds it while it runs (live), then in the
// history.
func (d *Daemon) execRecorded(ctx context.Context, x *execSlot, e *api.Execution, out *capture, req *api.ExecRequest) *api.Execution {
	s := x.s
	s.addLive(e, out) // StartExec's is live already
	e = d.runExec(ctx, x, e, out, req)
	var item *store.Executed
	s.Update(func(r *store.Record) {
		r.ExecCount++
		r.LastUsedAt = now()
		item = &store.Executed{SessionID: r.ID, ExecCount: r.ExecCount, LastUsedAt: r.LastUsedAt, Execution: executionRecord(e, d.cfg.HistoryRecordBytes)}
	})
	if d.sessions.has(s) {
		d.recorder.add(item)
	}
	// Queued before it leaves the live ones: a reader that misses it
	// there flushes the recorder and finds it in the store.
	s.dropLive(e.ID)
	return e
}

// checkExec checks an execution request; defTimeoutS is the session's.
func checkExec(c *config.Config, req *api.ExecRequest, defTimeoutS int) (time.Duration, error) {
	switch req.Language {
	case api.LanguagePython, api.LanguageShell:
	case "":
		return 0, errdefs.ErrInvalidArgument.WithMessage(`language is required: "python" or "shell"`)
	default:
		return 0, api.Errorf(errdefs.ErrInvalidArgument, `language %s is not supported: use "python" or "shell"`, api.Quote(req.Language))
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
	if req.Cwd != "" {
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
	e, out := d.newExecution(ctx, x, req, onEvent)
	return d.runExec(ctx, x, e, out, req), nil
}

// execSlot is a session claimed for one execution: one of the host's
// execution slots is held and the session counts it busy until release.
type execSlot struct {
	s       *session
	sb      Sandbox
	reset   bool
	timeout time.Duration
	env     map[string]string
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
	select {
	case d.execSlots <- struct{}{}:
	default:
		return nil, api.Errorf(errdefs.ErrResourceExhausted, "this host runs its maximum of %d executions at once: try again shortly", cap(d.execSlots))
	}
	sb, reset, err := d.claimAwake(ctx, s)
	if err != nil {
		<-d.execSlots
		return nil, err
	}
	return &execSlot{s: s, sb: sb, reset: reset, timeout: timeout, env: mergeEnv(sessionEnv, req.Env),
		release: func() { s.ReleaseExec(); <-d.execSlots }}, nil
}

// newExecution is a new execution of req in x, and the capture of its
// output (forwarded to onEvent if not nil).
func (d *Daemon) newExecution(ctx context.Context, x *execSlot, req *api.ExecRequest, onEvent func(api.Event)) (*api.Execution, *capture) {
	uid := callerFrom(ctx).UID
	sum := sha256.Sum256([]byte(req.Code))
	e := &api.Execution{ID: newID(), SessionID: x.sb.ID(), Language: req.Language, StartedAt: now(),
		CodeSHA256: hex.EncodeToString(sum[:]), CallerUID: &uid}
	return e, &capture{limit: d.cfg.MaxOutputBytes, budget: &answerBudget{left: d.cfg.MaxAnswerBytes}, onEvent: onEvent}
}

// runExec runs execution e of x in its sandbox. It fails no more: what
// goes wrong from here is the execution's status.
func (d *Daemon) runExec(ctx context.Context, x *execSlot, e *api.Execution, out *capture, req *api.ExecRequest) *api.Execution {
	s, sb := x.s, x.sb
	if out.onEvent != nil {
		// A streaming client that hangs up interrupts its execution, as
		// Ctrl-C would: its output has nowhere to go. (One waiting for the
		// whole answer may have left it to finish.) Undone before the
		// session takes its next execution.
		defer context.AfterFunc(ctx, func() {
			if ok, _ := sb.Interrupt(context.WithoutCancel(ctx)); ok {
				logging.From(ctx).Info("execution interrupted: its client hung up", "session", sb.ID())
			}
		})()
	}

	started := time.Now()
	r, err := sb.Exec(ctx, &isolation.ExecOptions{
		ID:        e.ID,
		Language:  req.Language,
		Code:      req.Code,
		Timeout:   x.timeout,
		Grace:     time.Duration(d.cfg.InterruptGraceS * float64(time.Second)),
		Env:       x.env,
		Cwd:       req.Cwd,
		MaxOutput: d.cfg.MaxOutputBytes,
		MaxAnswer: d.cfg.MaxAnswerBytes,
		OnDisplay: func(o isolation.RichOutput) { out.display(apiOutput(o)) },
	}, out.add)
	e.Stdout, e.Stderr = out.text()
	e.DurationMS = float64(time.Since(started).Microseconds()) / 1000
	if err != nil {
		d.recoverExec(ctx, s, sb, e, err)
		e.Metrics = &api.ExecMetrics{WallMS: e.DurationMS}
		return e
	}
	e.Status = r.Status
	e.ExitCode = r.ExitCode
	e.Result = r.Result
	e.Error = apiExecError(r.Error)
	e.Outputs = apiOutputs(r.Outputs)
	e.Truncated = r.Truncated || out.truncated
	out.budget.bound(e)
	// The displayed outputs came first and drew on the budget as they
	// came, in order with the output.
	e.Outputs = append(out.displayed, e.Outputs...)
	e.StateReset = r.StateReset || x.reset
	if r.Duration > 0 {
		e.DurationMS = float64(r.Duration.Microseconds()) / 1000
	}
	e.Metrics = &api.ExecMetrics{WallMS: e.DurationMS, CPUMS: float64(r.Usage.CPU.Microseconds()) / 1000, MemoryPeakBytes: r.Usage.MemoryPeak}
	if e.Status == api.StatusKilled {
		d.noticeOOM(s, sb)
	}
	d.metrics.ExecEnded(e.Language, e.Status, time.Since(started))
	d.memory.relayed(executionSize(e))
	return e
}

// noticeOOM publishes an oom event when the sandbox's count of
// out-of-memory kills went up since last looked at.
func (d *Daemon) noticeOOM(s *session, sb Sandbox) {
	st, err := sb.Stats()
	if err != nil {
		return
	}
	if seen := s.NoteOOMKills(st.OOMKills); st.OOMKills > seen {
		d.publish(s, api.ActionOOM, "out of memory: the kernel killed a process of the session")
	}
}

// recoverExec handles an execution whose sandbox stopped answering or died
// under it: the sandbox is replaced (state_reset), and the execution says
// what happened. The replacement does not depend on the request: a
// client that hangs up does not leave the session broken.
func (d *Daemon) recoverExec(ctx context.Context, s *session, sb Sandbox, e *api.Execution, cause error) {
	log := logging.From(ctx)
	e.StateReset = true
	e.ExitCode = 137
	switch {
	case errors.Is(cause, isolation.ErrUnresponsive):
		e.Status = api.StatusTimeout
		e.Error = &api.ExecError{Name: "Timeout", Value: "the sandbox stopped answering; it was restarted"}
	default:
		e.Status = api.StatusKilled
		e.Error = &api.ExecError{Name: "Killed", Value: "the sandbox was killed (out of memory or another limit); it was restarted"}
	}
	d.metrics.ExecLost(e.Language, e.Status)
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

// capture keeps an execution's output up to the cap and forwards it. mu
// guards the output against a reader of a running execution (text).
type capture struct {
	mu             sync.Mutex
	limit          int64
	budget         *answerBudget
	onEvent        func(api.Event)
	stdout, stderr strings.Builder
	truncated      bool
	// displayed are the outputs the code displayed as it ran, those
	// that fitted the budget.
	displayed []api.Output
}

// display keeps and forwards an output the code displayed, if it fits
// whole in what is left of the answer; one that does not is dropped, as
// outputs are.
func (c *capture) display(o api.Output) {
	c.mu.Lock()
	ok := c.budget.output(o)
	if ok {
		c.displayed = append(c.displayed, o)
	}
	c.mu.Unlock()
	// One goroutine calls display and add, in the output's order: the
	// events keep it outside the lock, which a slow client would hold.
	if ok && c.onEvent != nil {
		c.onEvent(api.Event{Type: api.EventDisplay, Output: &o})
	}
}

func (c *capture) add(kind, data string) {
	c.mu.Lock()
	b := &c.stdout
	if kind == api.EventStderr {
		b = &c.stderr
	}
	if room := c.limit - int64(b.Len()); int64(len(data)) > room {
		data = data[:max(room, 0)]
		c.truncated = true
	}
	data = c.budget.text(data)
	b.WriteString(data)
	c.mu.Unlock()
	if data != "" && c.onEvent != nil {
		c.onEvent(api.Event{Type: kind, Data: data})
	}
}

// text is the output kept so far.
func (c *capture) text() (stdout, stderr string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stdout.String(), c.stderr.String()
}
