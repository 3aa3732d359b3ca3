package execution

import (
	"errors"
	"fmt"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/isolation"
	"github.com/sandboxd/sandboxd/store"
)

// Lost says in e that its sandbox stopped answering or died under it
// (cause): the daemon replaces the sandbox, so the state is reset.
func Lost(e *api.Execution, cause error) {
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
}

// Undelivered records an execution of s that ended while no daemon heard
// it: the daemon restarted or crashed during it. Its output is gone; how
// it ended is kept, under the status "lost".
func (b *Book) Undelivered(s Session, r *isolation.ExecResult) {
	id := r.ID
	if id == "" {
		id = b.opts.NewID()
	}
	ms := float64(r.Duration.Microseconds()) / 1000
	how := fmt.Sprintf("it ended %s (exit code %d) after %.0f ms", r.Status, r.ExitCode, ms)
	if r.Error != nil && r.Error.Name != "" {
		how += ", with " + r.Error.Name
	}
	if r.StateReset {
		how += ", and the interpreter was restarted"
	}
	e := &api.Execution{
		ID:         id,
		Language:   r.Language,
		Status:     api.StatusLost,
		ExitCode:   r.ExitCode,
		Result:     r.Result,
		StartedAt:  b.opts.Now().Add(-r.Duration),
		DurationMS: ms,
		StateReset: r.StateReset,
		Error: &api.ExecError{Name: "DaemonRestarted",
			Value: "the daemon restarted while this execution ran, so its output was lost: " + how},
	}
	var item *store.Executed
	s.Update(func(r *store.Record) {
		e.SessionID = r.ID
		r.ExecCount++
		item = &store.Executed{SessionID: r.ID, ExecCount: r.ExecCount, LastUsedAt: r.LastUsedAt, Execution: Record(e, b.opts.RecordBytes)}
	})
	b.rec.Add(item)
	b.opts.Log.Warn("execution lost to a daemon restart recorded", "session", e.SessionID, "execution", id, "ended", r.Status)
}
