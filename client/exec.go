package client

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strconv"

	"github.com/sandboxd/sandboxd/api"
)

// Exec runs code in a session and returns the whole Execution. If onEvent
// is not nil, output is streamed to it as the code produces it.
func (c *Client) Exec(ctx context.Context, id string, req *api.ExecRequest, onEvent func(api.Event)) (*api.Execution, error) {
	return c.execution(ctx, request{method: "POST", path: sessionPath(id, "/exec"), json: req}, onEvent)
}

// InstallPackages runs pip in a session: the Execution of the install,
// its output streamed to onEvent if not nil.
func (c *Client) InstallPackages(ctx context.Context, id string, req *api.PackagesRequest, onEvent func(api.Event)) (*api.Execution, error) {
	return c.execution(ctx, request{method: "POST", path: sessionPath(id, "/packages"), json: req}, onEvent)
}

// Run runs code once in a fresh sandbox that is gone afterwards.
func (c *Client) Run(ctx context.Context, req *api.RunRequest, onEvent func(api.Event)) (*api.Execution, error) {
	return c.execution(ctx, request{method: "POST", path: "/v1/run", json: req}, onEvent)
}

func (c *Client) execution(ctx context.Context, r request, onEvent func(api.Event)) (*api.Execution, error) {
	if onEvent == nil {
		var out api.Execution
		return &out, c.call(ctx, r, &out)
	}
	r.accept = api.StreamMIME
	resp, err := c.send(ctx, r)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64<<10), 256<<20)
	for sc.Scan() {
		var ev api.Event
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			return nil, fmt.Errorf("bad stream line from sandboxd: %w", err)
		}
		switch ev.Type {
		case api.EventDone:
			if ev.Execution == nil {
				return nil, errors.New("sandboxd ended the stream without an execution")
			}
			return ev.Execution, nil
		case api.EventError:
			return nil, streamError(resp, ev.Error)
		default:
			onEvent(ev)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return nil, errors.New("sandboxd closed the stream before the execution ended")
}

// Interrupt interrupts the execution running in session id, as Ctrl-C
// would (Python raises KeyboardInterrupt; a shell command gets SIGINT, then
// SIGKILL after the daemon's grace): that execution answers status
// interrupted. It reports whether one was running.
func (c *Client) Interrupt(ctx context.Context, id string) (bool, error) {
	var out api.Interrupted
	err := c.call(ctx, request{method: "POST", path: sessionPath(id, "/interrupt")}, &out)
	return out.Interrupted, err
}

// StartExec starts code in a session without waiting for it (wait false)
// and returns the execution's id: Execution tells how it goes.
func (c *Client) StartExec(ctx context.Context, id string, req *api.ExecRequest) (string, error) {
	r := *req
	no := false
	r.Wait = &no
	var out api.ExecStarted
	return out.ID, c.call(ctx, request{method: "POST", path: sessionPath(id, "/exec"), json: &r}, &out)
}

// Execution is execution eid of a session: status "running" while it
// runs, with its output so far; then the whole Execution, while the
// session's history keeps it.
func (c *Client) Execution(ctx context.Context, id, eid string) (*api.Execution, error) {
	var out api.Execution
	return &out, c.call(ctx, request{method: "GET", path: sessionPath(id, "/executions/"+url.PathEscape(eid))}, &out)
}

// Executions lists a session's executions, newest first, as summaries
// (limit 0: all that are kept).
func (c *Client) Executions(ctx context.Context, id string, limit int) ([]api.ExecutionSummary, error) {
	q := url.Values{}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	var out api.ExecutionList
	return out.Executions, c.call(ctx, request{method: "GET", path: sessionPath(id, "/executions"), query: q}, &out)
}
