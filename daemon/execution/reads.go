package execution

import (
	"context"

	"github.com/sandboxd/sandboxd/api"
)

// Reads serve the router's reads of a session's executions (its history
// area, by shape): the book's, for the session the caller reaches.
type Reads struct {
	b *Book
	// find is session id as the caller in ctx may reach it (the daemon's
	// lookup and its authorization).
	find func(ctx context.Context, id string) (Session, error)
}

// Reads are the book's executions as the caller reaches them through find.
func (b *Book) Reads(find func(ctx context.Context, id string) (Session, error)) *Reads {
	return &Reads{b: b, find: find}
}

// Execution is execution eid of a session: running, or as its history
// keeps it (404 once the history let it go).
func (r *Reads) Execution(ctx context.Context, id, eid string) (*api.Execution, error) {
	s, err := r.find(ctx, id)
	if err != nil {
		return nil, err
	}
	return r.b.Execution(s, eid)
}

// Executions lists a session's executions, newest first: those under way,
// then those its history keeps; at most limit (0: all).
func (r *Reads) Executions(ctx context.Context, id string, limit int) ([]api.ExecutionSummary, error) {
	s, err := r.find(ctx, id)
	if err != nil {
		return nil, err
	}
	return r.b.Executions(s, limit)
}
