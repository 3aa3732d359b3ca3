package client

import (
	"context"

	"github.com/sandboxd/sandboxd/api"
)

// UpdateSession changes a session's settings that change while it lives
// (PATCH /v1/sessions/{id}): DeadlineS sets its deadline that many
// seconds from now, earlier or later than before, and 0 removes it.
func (c *Client) UpdateSession(ctx context.Context, id string, req api.UpdateSessionRequest) (*api.Session, error) {
	var out api.Session
	return &out, c.call(ctx, request{method: "PATCH", path: sessionPath(id, ""), json: req}, &out)
}
