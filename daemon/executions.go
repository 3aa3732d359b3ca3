package daemon

import (
	"context"

	"github.com/sandboxd/sandboxd/daemon/execution"
)

// Lives are the session's executions under way (execution.Session).
func (s *session) Lives() *execution.Lives { return &s.live }

// History serves the API's reads of executions (the book owns them): the
// daemon says which session a caller reaches.
func (d *Daemon) History() *execution.Reads {
	return d.execs.Reads(func(ctx context.Context, id string) (execution.Session, error) {
		s, err := d.lookup(ctx, id)
		if err != nil {
			return nil, err
		}
		return s, nil
	})
}
