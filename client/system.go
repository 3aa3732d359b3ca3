package client

import (
	"context"
	"fmt"
	"net/http"

	"github.com/containerd/errdefs"

	"github.com/sandboxd/sandboxd/api"
)

// Health checks the daemon answers and is healthy.
func (c *Client) Health(ctx context.Context) error {
	_, err := c.HealthStatus(ctx)
	return err
}

// HealthStatus is the daemon's health: "ok"; "degraded" with the reasons
// (short of disk space: it serves, but makes no new disk), not an error;
// or "unhealthy" with the reasons, which is also an error (unavailable)
// saying them. An error
// without a Health means the daemon did not answer.
func (c *Client) HealthStatus(ctx context.Context) (*api.Health, error) {
	resp, err := c.send(ctx, request{method: "GET", path: "/v1/health", answers: []int{http.StatusServiceUnavailable}})
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var out api.Health
	if err := decode(resp.Body, &out); err != nil {
		return nil, fmt.Errorf("bad answer from sandboxd: %w", err)
	}
	if resp.StatusCode == http.StatusServiceUnavailable {
		msg := "sandboxd is unhealthy"
		if out.Error != nil {
			msg = out.Error.Message
		}
		return &out, errdefs.ErrUnavailable.WithMessage(msg)
	}
	return &out, nil
}

// Info describes the daemon and host.
func (c *Client) Info(ctx context.Context) (*api.Info, error) {
	var out api.Info
	return &out, c.call(ctx, request{method: "GET", path: "/v1/info"}, &out)
}
