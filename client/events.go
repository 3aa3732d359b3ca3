package client

import (
	"context"
	"time"

	"github.com/containerd/errdefs"

	"github.com/sandboxd/sandboxd/api"
)

// Events streams the session events f selects to fn as they happen (after
// those since f.Since the daemon still keeps). It returns nil once f.Until
// has passed, ctx's error when ctx ends, fn's error when fn fails, and an
// unavailable error when the daemon ends the stream early (it shuts down,
// or the caller fell too far behind).
func (c *Client) Events(ctx context.Context, f api.EventFilter, fn func(*api.SessionEvent) error) error {
	resp, err := c.send(ctx, request{method: "GET", path: "/v1/events", query: f.Query(), accept: api.StreamMIME})
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if err := eachLine(ctx, c, resp, "event", func(ev api.SessionEvent) error { return fn(&ev) }); err != nil {
		return err
	}
	if !f.Until.IsZero() && !time.Now().Before(f.Until) {
		return nil
	}
	return &answerError{
		err:       errdefs.ErrUnavailable.WithMessage("sandboxd ended the event stream early: ask again, with since, to replay what was missed"),
		requestID: resp.Header.Get(api.RequestIDHeader),
	}
}
