package execution

import (
	"slices"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/store"
)

// HistoryCut is what the history keeps of e: e itself when it is at most
// keep bytes, else a copy cut to keep and marked summarized (and
// truncated). The answer went out whole; the history is what a client
// reads back later, and history_total_limit records of max_answer_bytes
// each would fill the disk and the daemon's memory (bbolt maps the file).
// Stderr keeps up to a quarter of keep whatever stdout took, so an error
// after much output is still seen; then the error, the result, and the
// rich outputs that fit whole, as an answer is bounded.
func HistoryCut(e *api.Execution, keep int64) *api.Execution {
	if Size(e) <= keep {
		return e
	}
	c := *e
	c.Outputs = slices.Clone(e.Outputs) // bound drops from its slice in place
	errShare := min(int64(len(e.Stderr)), keep/4)
	b := Budget{left: keep - errShare}
	c.Stdout = b.Text(e.Stdout)
	b.left += errShare
	c.Stderr = b.Text(e.Stderr)
	b.Bound(&c)
	c.Summarized = true
	return &c
}

// Size is the bytes of e's output, result, error and outputs.
func Size(e *api.Execution) int64 {
	n := len(e.Stdout) + len(e.Stderr)
	if e.Result != nil {
		n += len(*e.Result)
	}
	if e.Error != nil {
		n += len(e.Error.Name) + len(e.Error.Value) + len(e.Error.Traceback)
	}
	for _, o := range e.Outputs {
		n += int(OutputSize(o))
	}
	return int64(n)
}

// Record is an execution as the store keeps it: cut to keep
// bytes (history_record_bytes, see HistoryCut).
func Record(e *api.Execution, keep int64) *store.Execution {
	e = HistoryCut(e, keep)
	r := &store.Execution{
		ID: e.ID, SessionID: e.SessionID, Language: e.Language, Status: e.Status,
		Stdout: e.Stdout, Stderr: e.Stderr, ExitCode: e.ExitCode, Result: e.Result,
		StartedAt: e.StartedAt, DurationMS: e.DurationMS, Truncated: e.Truncated, StateReset: e.StateReset,
		Summarized: e.Summarized, Metrics: (*store.ExecMetrics)(e.Metrics), CodeSHA256: e.CodeSHA256, CallerUID: e.CallerUID,
	}
	if e.Error != nil {
		r.Error = &store.ExecError{Name: e.Error.Name, Value: e.Error.Value, Traceback: e.Error.Traceback}
	}
	for _, o := range e.Outputs {
		r.Outputs = append(r.Outputs, store.Output{MIME: o.MIME, Data: o.Data, Bundle: o.Bundle})
	}
	return r
}

// View is a recorded execution as the API shows it.
func View(r *store.Execution) api.Execution {
	e := api.Execution{
		ID: r.ID, SessionID: r.SessionID, Language: r.Language, Status: r.Status,
		Stdout: r.Stdout, Stderr: r.Stderr, ExitCode: r.ExitCode, Result: r.Result,
		StartedAt: r.StartedAt, DurationMS: r.DurationMS, Truncated: r.Truncated, StateReset: r.StateReset,
		Summarized: r.Summarized, Metrics: (*api.ExecMetrics)(r.Metrics), CodeSHA256: r.CodeSHA256, CallerUID: r.CallerUID,
	}
	if r.Error != nil {
		e.Error = &api.ExecError{Name: r.Error.Name, Value: r.Error.Value, Traceback: r.Error.Traceback}
	}
	for _, o := range r.Outputs {
		e.Outputs = append(e.Outputs, api.Output{MIME: o.MIME, Data: o.Data, Bundle: o.Bundle})
	}
	return e
}
