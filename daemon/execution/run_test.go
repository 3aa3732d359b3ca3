package execution

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/isolation"
)

// fakeSandbox answers res and err, after writing out to the output.
type fakeSandbox struct {
	res *isolation.ExecResult
	err error
	out string
}

func (f *fakeSandbox) ID() string                              { return "s1" }
func (f *fakeSandbox) Interrupt(context.Context) (bool, error) { return false, nil }
func (f *fakeSandbox) Exec(_ context.Context, o *isolation.ExecOptions, out isolation.Output) (*isolation.ExecResult, error) {
	out(api.EventStdout, f.out)
	o.OnDisplay(isolation.RichOutput{MIME: "text/plain", Data: "shown"})
	return f.res, f.err
}

// TestBookExec: the result fills the execution, displayed outputs first;
// a kill is looked into; the execution is counted, timed.
func TestBookExec(t *testing.T) {
	b, _ := newTestBook(t, true)
	var counted []time.Duration
	b.opts.Counted = func(_ *api.Execution, took time.Duration) { counted = append(counted, took) }
	killed := false
	sb := &fakeSandbox{out: "hi\n", res: &isolation.ExecResult{Status: api.StatusKilled, ExitCode: 137,
		Outputs: []isolation.RichOutput{{MIME: "image/png", Data: "AAAA"}}, Duration: time.Millisecond}}
	r := &Run{Sandbox: sb, Reset: true, Killed: func() { killed = true },
		Lost: func(context.Context, *api.Execution, error) { t.Error("lost") }}
	req := &api.ExecRequest{Language: api.LanguagePython, Code: "x"}
	e, out := b.Start("s1", 0, req, nil)
	e = b.Exec(context.Background(), r, e, out, req)
	if e.Stdout != "hi\n" || e.Status != api.StatusKilled || !e.StateReset || len(e.Outputs) != 2 || e.Outputs[0].Data != "shown" ||
		e.DurationMS != 1 || !killed || len(counted) != 1 || counted[0] <= 0 {
		t.Fatalf("got %+v killed %v counted %v", e, killed, counted)
	}
}

// TestBookExecLost: a sandbox lost under the execution is the
// execution's status, handed to the daemon's Lost, and counted untimed.
func TestBookExecLost(t *testing.T) {
	b, _ := newTestBook(t, true)
	var counted []time.Duration
	b.opts.Counted = func(_ *api.Execution, took time.Duration) { counted = append(counted, took) }
	var lost error
	sb := &fakeSandbox{err: isolation.ErrUnresponsive}
	r := &Run{Sandbox: sb, Killed: func() { t.Error("killed") },
		Lost: func(_ context.Context, e *api.Execution, cause error) { lost = cause }}
	req := &api.ExecRequest{Language: api.LanguageShell, Code: "x"}
	e, out := b.Start("s1", 0, req, nil)
	e = b.Exec(context.Background(), r, e, out, req)
	if e.Status != api.StatusTimeout || !e.StateReset || e.ExitCode != 137 || !errors.Is(lost, isolation.ErrUnresponsive) ||
		e.Metrics == nil || len(counted) != 1 || counted[0] != 0 {
		t.Fatalf("got %+v lost %v counted %v", e, lost, counted)
	}
}
