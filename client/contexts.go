package client

import (
	"context"
	"net/url"

	"github.com/sandboxd/sandboxd/api"
)

// CreateContext makes a code context in a session: an interpreter of its
// own (docs/API.md, Code contexts).
func (c *Client) CreateContext(ctx context.Context, id string, req api.CreateContextRequest) (*api.CodeContext, error) {
	var out api.CodeContext
	return &out, c.call(ctx, request{method: "POST", path: sessionPath(id, "/contexts"), json: req}, &out)
}

// Contexts lists a session's code contexts, the default one first.
func (c *Client) Contexts(ctx context.Context, id string) ([]api.CodeContext, error) {
	var out api.ContextList
	err := c.call(ctx, request{method: "GET", path: sessionPath(id, "/contexts")}, &out)
	return out.Contexts, err
}

// DeleteContext stops a context's interpreter and forgets it.
func (c *Client) DeleteContext(ctx context.Context, id, cid string) error {
	return c.call(ctx, request{method: "DELETE", path: sessionPath(id, "/contexts/"+url.PathEscape(cid))}, nil)
}

// RestartContext starts a context's interpreter afresh.
func (c *Client) RestartContext(ctx context.Context, id, cid string) (*api.CodeContext, error) {
	var out api.CodeContext
	return &out, c.call(ctx, request{method: "POST", path: sessionPath(id, "/contexts/"+url.PathEscape(cid)+"/restart")}, &out)
}
