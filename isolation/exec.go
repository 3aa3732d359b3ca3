package isolation

import (
	"context"
	"time"

	"github.com/sandboxd/sandboxd/isolation/agent"
)

// ExecOptions say what to run in a sandbox and how.
type ExecOptions struct {
	// ID names the execution, so that an answer no daemon heard can be
	// matched with it later.
	ID string
	// Language is LanguagePython or LanguageShell.
	Language string
	Code     string
	// Timeout bounds the execution; Grace is how long an interrupt has
	// to stop it before the interpreter is killed and restarted.
	Timeout time.Duration
	Grace   time.Duration
	// Env is added to the sandbox's environment for this execution.
	Env map[string]string
	// Cwd is the working folder inside the sandbox (default: where the
	// interpreter is, which starts in the user's home).
	Cwd string
	// Context names the interpreter of a Python execution (""; the
	// first), and ContextCwd its folder, where the agent starts it if it
	// lacks it (see Sandbox.Context).
	Context, ContextCwd string
	// MaxOutput caps stdout and stderr each, in bytes; MaxAnswer the
	// whole answer (output, error, result, outputs), which agents before
	// protocol 4 do not bound.
	MaxOutput int64
	MaxAnswer int64
	// OnDisplay, if not nil, gets each output the code displays, as it
	// does, in order with the output streamed to Exec's out (agents of
	// protocol 9 on; older ones display nothing). ExecResult.Outputs
	// are those that came after.
	OnDisplay func(RichOutput)
	// Checkpoints, for a Python cell, parks a copy of its context's
	// interpreter as it is before the cell, keeping the context's newest
	// Checkpoints (at most agent.MaxCheckpoints; 0: none), which Undo
	// puts back. Agents before protocol 17 park none.
	Checkpoints int
}

// ExecError is the exception an execution's code raised (or a template's
// preload code: PreloadError).
type ExecError struct {
	Name      string
	Value     string
	Traceback string
}

// RichOutput is one rich output of an execution: a figure, what the code
// displayed, or the last expression's representations. MIME and Data are
// the richest (Data base64 whatever the type); Bundle is every
// representation, mime -> data, text types as text, binary ones base64.
type RichOutput struct {
	MIME   string
	Data   string
	Bundle map[string]string
}

// ExecResult is how an execution ended. Status is one of the execution
// statuses (StatusOK, StatusError, StatusTimeout, StatusInterrupted,
// StatusKilled).
type ExecResult struct {
	ID       string
	Language string
	Status   string
	ExitCode int
	Result   *string
	Error    *ExecError
	// Outputs are the outputs not handed to ExecOptions.OnDisplay: the
	// last expression's rich representations, then the figures.
	Outputs    []RichOutput
	Truncated  bool
	StateReset bool
	// Checkpoint says a copy of the interpreter as it was before the
	// execution was parked (ExecOptions.Checkpoints): Undo can put it
	// back.
	Checkpoint bool
	Duration   time.Duration
	// Usage is what the sandbox's cgroup used while the execution ran.
	Usage Usage
}

// Usage is what a sandbox used over an execution: CPU time, and the peak
// of its memory (see cgroups.Meter).
type Usage struct {
	CPU        time.Duration
	MemoryPeak uint64
}

// Output gets each piece of an execution's output as the code produces
// it; stream is StreamStdout or StreamStderr.
type Output func(stream, data string)

// request is opts as the agent's wire request.
func (o *ExecOptions) request() agent.Request {
	return agent.Request{
		ID:          o.ID,
		Language:    o.Language,
		Code:        o.Code,
		Timeout:     o.Timeout.Seconds(),
		Grace:       o.Grace.Seconds(),
		Env:         o.Env,
		Cwd:         o.Cwd,
		Context:     o.Context,
		ContextCwd:  o.ContextCwd,
		MaxOutput:   o.MaxOutput,
		MaxAnswer:   o.MaxAnswer,
		Checkpoints: o.Checkpoints,
	}
}

// resultOf is the agent's final message as an ExecResult.
func resultOf(m *agent.Message) *ExecResult {
	return &ExecResult{
		ID:         m.ID,
		Language:   m.Language,
		Status:     m.Status,
		ExitCode:   m.ExitCode,
		Result:     m.Result,
		Error:      execError(m.Error),
		Outputs:    richOutputs(m.Outputs),
		Truncated:  m.Truncated,
		StateReset: m.StateReset,
		Checkpoint: m.Checkpoint,
		Duration:   time.Duration(m.DurationMS * float64(time.Millisecond)),
	}
}

// execError is the agent's exception as the runtime's.
func execError(e *agent.ExecError) *ExecError {
	if e == nil {
		return nil
	}
	x := ExecError(*e)
	return &x
}

// richOutputs are the agent's outputs as the runtime's.
func richOutputs(outs []agent.Output) []RichOutput {
	if outs == nil {
		return nil
	}
	rs := make([]RichOutput, len(outs))
	for i, o := range outs {
		rs[i] = RichOutput(o)
	}
	return rs
}

// Exec runs one execution in the sandbox's agent. A timeout, an exception
// or a kill is an ExecResult; an error means the sandbox is out of step
// with the daemon (its agent stopped answering or died: ErrUnresponsive
// for the first) and must be restarted. ctx bounds the wait for the
// agent beyond the execution's own timeout.
func (s *Sandbox) Exec(ctx context.Context, o *ExecOptions, out Output) (*ExecResult, error) {
	// The agent enforces the timeout itself (interrupt, then kill and
	// restart the interpreter); the wait here only catches an agent that
	// stopped answering.
	wait := o.Timeout + o.Grace + 10*time.Second
	if dl, ok := ctx.Deadline(); ok {
		wait = min(wait, time.Until(dl))
	}
	var use Usage
	var display func(agent.Output)
	if o.OnDisplay != nil {
		display = func(d agent.Output) { o.OnDisplay(RichOutput(d)) }
	}
	m, err := s.exec(o.request(), wait, out, display, &use)
	if err != nil {
		return nil, err
	}
	r := resultOf(m)
	r.Usage = use
	return r, nil
}

// ErrUnresponsive is an agent that stopped answering.
var ErrUnresponsive = agent.ErrUnresponsive

// ErrAgentVersion is a sandbox whose agent (started by an older or newer
// daemon) speaks a protocol this daemon does not: its interpreter must be
// restarted with this daemon's agent.
var ErrAgentVersion = agent.ErrProtocol
