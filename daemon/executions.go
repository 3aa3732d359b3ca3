package daemon

import (
	"context"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/daemon/execution"
)

// Lives are the session's executions under way (execution.Session).
func (s *session) Lives() *execution.Lives { return &s.live }

// Execution is execution eid of a session: running, or as its history
// keeps it (404 once the history let it go).
func (d *Daemon) Execution(ctx context.Context, id, eid string) (*api.Execution, error) {
	s, err := d.lookup(ctx, id)
	if err != nil {
		return nil, err
	}
	return d.execs.Execution(s, eid)
}

// Executions lists a session's executions, newest first: those under way,
// then those its history keeps; at most limit (0: all).
func (d *Daemon) Executions(ctx context.Context, id string, limit int) ([]api.ExecutionSummary, error) {
	s, err := d.lookup(ctx, id)
	if err != nil {
		return nil, err
	}
	return d.execs.Executions(s, limit)
}
