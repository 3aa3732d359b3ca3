package client

import (
	"context"

	"github.com/sandboxd/sandboxd/api"
)

// Health checks the daemon answers.
func (c *Client) Health(ctx context.Context) error {
	_, err := c.HealthStatus(ctx)
	return err
}

// HealthStatus is the daemon's health: "ok", or "degraded" with the
// check that found the host short (the data dir's space).
func (c *Client) HealthStatus(ctx context.Context) (*api.Health, error) {
	var out api.Health
	return &out, c.call(ctx, request{method: "GET", path: "/v1/health"}, &out)
}

// Info describes the daemon and host.
func (c *Client) Info(ctx context.Context) (*api.Info, error) {
	var out api.Info
	return &out, c.call(ctx, request{method: "GET", path: "/v1/info"}, &out)
}
