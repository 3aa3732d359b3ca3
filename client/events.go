package client

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
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
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 4<<10), 1<<20)
	for sc.Scan() {
		// A line is an event, or the error that ends the stream.
		var line struct {
			api.SessionEvent
			Error *api.ErrorDetail `json:"error"`
		}
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			return fmt.Errorf("bad event line from sandboxd: %w", err)
		}
		if line.Type == api.EventError {
			return streamError(resp, line.Error)
		}
		if err := fn(&line.SessionEvent); err != nil {
			return err
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := sc.Err(); err != nil {
		return c.connError(err)
	}
	if !f.Until.IsZero() && !time.Now().Before(f.Until) {
		return nil
	}
	return &answerError{
		err:       errdefs.ErrUnavailable.WithMessage("sandboxd ended the event stream early: ask again, with since, to replay what was missed"),
		requestID: resp.Header.Get(api.RequestIDHeader),
	}
}
