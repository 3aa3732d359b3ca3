package execution

import (
	"context"
	"time"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/internal/logging"
	"github.com/sandboxd/sandboxd/isolation"
)

// Sandbox is where an execution runs: the session's sandbox, claimed for it.
type Sandbox interface {
	ID() string
	Exec(ctx context.Context, o *isolation.ExecOptions, out isolation.Output) (*isolation.ExecResult, error)
	Interrupt(ctx context.Context) (bool, error)
}

// Run is a sandbox claimed for one execution, and the daemon's handling
// of what befalls the sandbox meanwhile.
type Run struct {
	Sandbox Sandbox
	Timeout time.Duration
	Env     map[string]string
	// Reset says the interpreter's state was lost since the session's
	// last execution (state_reset).
	Reset bool
	// Context names the interpreter that runs a Python execution (""
	// the default one), ContextCwd the folder a new sandbox starts it in.
	Context, ContextCwd string
	// Lost replaces the sandbox when it stopped answering or died under
	// e (which Lost already says); Killed looks into a kill (out of
	// memory?).
	Lost   func(ctx context.Context, e *api.Execution, cause error)
	Killed func()
	// Checkpoints, above 0, has the agent park a copy of the interpreter
	// before the code runs, keeping that many (undo); Parked then hears
	// whether it did, once the sandbox answered.
	Checkpoints int
	Parked      func(bool)
}

// Exec runs execution e of req in r's sandbox. It fails no more: what
// goes wrong from here is the execution's status.
func (b *Book) Exec(ctx context.Context, r *Run, e *api.Execution, out *Capture, req *api.ExecRequest) *api.Execution {
	sb := r.Sandbox
	if out.Streams() {
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
	res, err := sb.Exec(ctx, &isolation.ExecOptions{
		ID:          e.ID,
		Language:    req.Language,
		Code:        req.Code,
		Timeout:     r.Timeout,
		Grace:       b.opts.Grace,
		Env:         r.Env,
		Cwd:         req.Cwd,
		Context:     r.Context,
		ContextCwd:  r.ContextCwd,
		Checkpoints: r.Checkpoints,
		MaxOutput:   b.opts.MaxOutput,
		MaxAnswer:   b.opts.MaxAnswer,
		OnDisplay:   func(o isolation.RichOutput) { out.Display(APIOutput(o)) },
	}, out.Add)
	if r.Parked != nil {
		r.Parked(err == nil && res.Checkpoint)
	}
	e.Stdout, e.Stderr = out.Text()
	e.DurationMS = float64(time.Since(started).Microseconds()) / 1000
	if err != nil {
		Lost(e, err)
		b.opts.Counted(e, 0)
		r.Lost(ctx, e, err)
		e.Metrics = &api.ExecMetrics{WallMS: e.DurationMS}
		return e
	}
	e.Status = res.Status
	e.ExitCode = res.ExitCode
	e.Result = res.Result
	e.Error = APIExecError(res.Error)
	e.Outputs = APIOutputs(res.Outputs)
	out.Finish(e, res.Truncated)
	e.StateReset = res.StateReset || r.Reset
	if res.Duration > 0 {
		e.DurationMS = float64(res.Duration.Microseconds()) / 1000
	}
	e.Metrics = &api.ExecMetrics{WallMS: e.DurationMS, CPUMS: float64(res.Usage.CPU.Microseconds()) / 1000, MemoryPeakBytes: res.Usage.MemoryPeak}
	if e.Status == api.StatusKilled {
		r.Killed()
	}
	b.opts.Counted(e, time.Since(started))
	b.Relayed(e)
	return e
}

// APIExecError is the exception an execution raised, as the API shows it.
func APIExecError(e *isolation.ExecError) *api.ExecError {
	if e == nil {
		return nil
	}
	return &api.ExecError{Name: e.Name, Value: e.Value, Traceback: e.Traceback}
}

// APIOutput is one rich output, as the API shows it.
func APIOutput(o isolation.RichOutput) api.Output {
	return api.Output{MIME: o.MIME, Data: o.Data, Bundle: o.Bundle}
}

// APIOutputs are rich outputs, as the API shows them.
func APIOutputs(outs []isolation.RichOutput) []api.Output {
	if outs == nil {
		return nil
	}
	as := make([]api.Output, len(outs))
	for i, o := range outs {
		as[i] = APIOutput(o)
	}
	return as
}
