package client

import (
	"context"

	"github.com/sandboxd/sandboxd/api"
)

// Undo takes session id back to before its last steps executions (0:
// one): its interpreters and /workspace (a session made with
// checkpoints). It answers how many it went back.
func (c *Client) Undo(ctx context.Context, id string, steps int) (int, error) {
	var out api.UndoResult
	err := c.call(ctx, request{method: "POST", path: sessionPath(id, "/undo"), json: api.UndoRequest{Steps: steps}}, &out)
	return out.Undone, err
}
