package isolation

import (
	"context"
	"time"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/isolation/agent"
)

// ExecOptions say what to run in a sandbox and how.
type ExecOptions struct {
	// ID names the execution, so that an answer no daemon heard can be
	// matched with it later.
	ID string
	// Language is api.LanguagePython or api.LanguageShell.
	Language string
	Code     string
	// Timeout bounds the execution; Grace is how long an interrupt has
	// to stop it before the interpreter is killed and restarted.
	Timeout time.Duration
	Grace   time.Duration
	// Env is added to the sandbox's environment for this execution.
	Env map[string]string
	// Cwd is the working folder inside the sandbox (default /workspace).
	Cwd string
	// MaxOutput caps stdout and stderr each, in bytes; MaxAnswer the
	// whole answer (output, error, result, outputs), which agents before
	// protocol 4 do not bound.
	MaxOutput int64
	MaxAnswer int64
	// OnDisplay, if not nil, gets each output the code displays, as it
	// does, in order with the output streamed to Exec's out (agents of
	// protocol 9 on; older ones display nothing). ExecResult.Outputs
	// are those that came after.
	OnDisplay func(api.Output)
}

// ExecResult is how an execution ended. Status is one of the api
// execution statuses (ok, error, timeout, interrupted, killed).
type ExecResult struct {
	ID       string
	Language string
	Status   string
	ExitCode int
	Result   *string
	Error    *api.ExecError
	// Outputs are the outputs not handed to ExecOptions.OnDisplay: the
	// last expression's rich representations, then the figures.
	Outputs    []api.Output
	Truncated  bool
	StateReset bool
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
// it; stream is api.EventStdout or api.EventStderr.
type Output func(stream, data string)

// request is opts as the agent's wire request.
func (o *ExecOptions) request() agent.Request {
	return agent.Request{
		ID:        o.ID,
		Language:  o.Language,
		Code:      o.Code,
		Timeout:   o.Timeout.Seconds(),
		Grace:     o.Grace.Seconds(),
		Env:       o.Env,
		Cwd:       o.Cwd,
		MaxOutput: o.MaxOutput,
		MaxAnswer: o.MaxAnswer,
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
		Error:      m.Error,
		Outputs:    m.Outputs,
		Truncated:  m.Truncated,
		StateReset: m.StateReset,
		Duration:   time.Duration(m.DurationMS * float64(time.Millisecond)),
	}
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
	m, err := s.exec(o.request(), wait, out, o.OnDisplay, &use)
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
