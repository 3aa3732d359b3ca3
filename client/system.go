package client

import (
	"context"

	"github.com/sandboxd/sandboxd/api"
)

// Health checks the daemon answers.
func (c *Client) Health(ctx context.Context) error {
	return c.call(ctx, request{method: "GET", path: "/v1/health"}, nil)
}

// Info describes the daemon and host.
func (c *Client) Info(ctx context.Context) (*api.Info, error) {
	var out api.Info
	return &out, c.call(ctx, request{method: "GET", path: "/v1/info"}, &out)
}
