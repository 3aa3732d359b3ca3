package client

import (
	"context"
	"fmt"
	"net/http"
	"net/url"

	"github.com/sandboxd/sandboxd/api"
)

func sessionPath(id string, rest string) string {
	return "/v1/sessions/" + url.PathEscape(id) + rest
}

// CreateSession starts a session, ready to execute; a nil req asks for
// the defaults (the daemon refuses a body of null).
func (c *Client) CreateSession(ctx context.Context, req *api.CreateSessionRequest) (*api.Session, error) {
	if req == nil {
		req = &api.CreateSessionRequest{}
	}
	var out api.Session
	return &out, c.call(ctx, request{method: "POST", path: "/v1/sessions", json: req}, &out)
}

// CreateSessionOnce is CreateSession under an Idempotency-Key: a retry
// with the same key (after a timeout, say) answers the session the first
// call made, within 24 hours, and created is false. Another request under
// a used key is a conflict.
func (c *Client) CreateSessionOnce(ctx context.Context, req *api.CreateSessionRequest, key string) (s *api.Session, created bool, err error) {
	if req == nil {
		req = &api.CreateSessionRequest{}
	}
	resp, err := c.send(ctx, request{method: "POST", path: "/v1/sessions", json: req, header: http.Header{api.HeaderIdempotencyKey: {key}}})
	if err != nil {
		return nil, false, err
	}
	defer resp.Body.Close()
	var out api.Session
	if err := decode(resp.Body, &out); err != nil {
		return nil, false, fmt.Errorf("bad answer from sandboxd: %w", err)
	}
	return &out, resp.StatusCode == http.StatusCreated, nil
}

// ListSessions lists sessions that carry all the given labels.
func (c *Client) ListSessions(ctx context.Context, labels map[string]string) ([]api.Session, error) {
	q := url.Values{}
	for k, v := range labels {
		q.Add("label", k+"="+v)
	}
	var out api.SessionList
	return out.Sessions, c.call(ctx, request{method: "GET", path: "/v1/sessions", query: q}, &out)
}

// GetSession returns one session.
func (c *Client) GetSession(ctx context.Context, id string) (*api.Session, error) {
	var out api.Session
	return &out, c.call(ctx, request{method: "GET", path: sessionPath(id, "")}, &out)
}

// DeleteSession removes a session and everything of it.
func (c *Client) DeleteSession(ctx context.Context, id string) error {
	return c.call(ctx, request{method: "DELETE", path: sessionPath(id, "")}, nil)
}

// StopSession stops a session's processes, keeping its workspace.
func (c *Client) StopSession(ctx context.Context, id string) (*api.Session, error) {
	return c.lifecycle(ctx, id, "stop")
}

// StartSession starts a stopped session with a fresh interpreter.
func (c *Client) StartSession(ctx context.Context, id string) (*api.Session, error) {
	return c.lifecycle(ctx, id, "start")
}

// RestartSession replaces a session's interpreter with a fresh one.
func (c *Client) RestartSession(ctx context.Context, id string) (*api.Session, error) {
	return c.lifecycle(ctx, id, "restart")
}

// SetNetwork changes a session's network policy, at once: connections
// to what the new one does not allow are cut.
func (c *Client) SetNetwork(ctx context.Context, id string, req *api.NetworkRequest) (*api.Session, error) {
	var out api.Session
	return &out, c.call(ctx, request{method: "PATCH", path: sessionPath(id, "/network"), json: req}, &out)
}

func (c *Client) lifecycle(ctx context.Context, id, op string) (*api.Session, error) {
	var out api.Session
	return &out, c.call(ctx, request{method: "POST", path: sessionPath(id, "/"+op)}, &out)
}

// PauseSession freezes every process of a session: memory and
// interpreter state stay, CPU use stops. An execution, a file call or
// stats resumes it, as ResumeSession does.
func (c *Client) PauseSession(ctx context.Context, id string) (*api.Session, error) {
	return c.lifecycle(ctx, id, "pause")
}

// HibernateSession saves the session's memory to disk and ends its
// sandbox (runsc): RAM and CPU freed; its next use wakes it.
func (c *Client) HibernateSession(ctx context.Context, id string) (*api.Session, error) {
	return c.lifecycle(ctx, id, "hibernate")
}

// ResumeSession lets a paused session run on where it stopped.
func (c *Client) ResumeSession(ctx context.Context, id string) (*api.Session, error) {
	return c.lifecycle(ctx, id, "resume")
}

// Stats reports what a session uses now.
func (c *Client) Stats(ctx context.Context, id string) (*api.Stats, error) {
	var out api.Stats
	return &out, c.call(ctx, request{method: "GET", path: sessionPath(id, "/stats")}, &out)
}
