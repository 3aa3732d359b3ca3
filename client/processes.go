package client

import (
	"context"
	"io"
	"net/url"
	"strconv"

	"github.com/sandboxd/sandboxd/api"
)

// StartProcess starts a command in the background in session id (exec
// --detach): it runs until it exits or the session stops; ProcessLogs
// reads its output.
func (c *Client) StartProcess(ctx context.Context, id string, req *api.ProcessRequest) (*api.Process, error) {
	var out api.Process
	return &out, c.call(ctx, request{method: "POST", path: sessionPath(id, "/processes"), json: req}, &out)
}

// Processes lists session id's processes, as its sandbox names them.
func (c *Client) Processes(ctx context.Context, id string) ([]api.Process, error) {
	var out api.ProcessList
	return out.Processes, c.call(ctx, request{method: "GET", path: sessionPath(id, "/processes")}, &out)
}

// SignalProcess sends signal ("": TERM; KILL, INT, HUP, a number) to
// process pid of session id.
func (c *Client) SignalProcess(ctx context.Context, id string, pid int, signal string) error {
	q := url.Values{}
	if signal != "" {
		q.Set("signal", signal)
	}
	return c.call(ctx, request{method: "DELETE", path: sessionPath(id, "/processes/"+strconv.Itoa(pid)), query: q}, nil)
}

// ProcessLogs reads a background process's output from offset; running
// says whether it still runs, exit how it ended when the daemon saw it.
// The caller closes the reader.
func (c *Client) ProcessLogs(ctx context.Context, id string, pid int, offset int64) (r io.ReadCloser, running bool, exit *int, err error) {
	q := url.Values{}
	if offset > 0 {
		q.Set("offset", strconv.FormatInt(offset, 10))
	}
	resp, err := c.send(ctx, request{method: "GET", path: sessionPath(id, "/processes/"+strconv.Itoa(pid)+"/logs"), query: q})
	if err != nil {
		return nil, false, nil, err
	}
	if v := resp.Header.Get(api.HeaderProcessExitCode); v != "" {
		if n, err := strconv.Atoi(v); err == nil {
			exit = &n
		}
	}
	return resp.Body, resp.Header.Get(api.HeaderProcessRunning) == "true", exit, nil
}
