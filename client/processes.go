package client

import (
	"bytes"
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

// WriteStdin sends b to an attached process's input (its terminal, with
// one); eof closes its input after.
func (c *Client) WriteStdin(ctx context.Context, id string, pid int, b []byte, eof bool) error {
	q := url.Values{}
	if eof {
		q.Set("eof", "1")
	}
	return c.call(ctx, request{method: "POST", path: sessionPath(id, "/processes/"+strconv.Itoa(pid)+"/stdin"), query: q, body: bytes.NewReader(b)}, nil)
}

// ResizeProcess sets an attached process's terminal size.
func (c *Client) ResizeProcess(ctx context.Context, id string, pid int, size api.TermSize) error {
	return c.call(ctx, request{method: "POST", path: sessionPath(id, "/processes/"+strconv.Itoa(pid)+"/resize"), json: size}, nil)
}

// ProcessOutput sends fn an attached process's output from from ("start",
// "now", or a byte offset) and, with follow, what comes until it ends
// (the last line carries its exit code). opened, if not nil, is called
// once the daemon answers: output after it is not missed. It returns nil
// at the stream's end.
func (c *Client) ProcessOutput(ctx context.Context, id string, pid int, from string, follow bool, opened func(), fn func(api.ProcessOutput) error) error {
	q := url.Values{}
	if from != "" {
		q.Set("from", from)
	}
	if follow {
		q.Set("follow", "1")
	}
	resp, err := c.send(ctx, request{method: "GET", path: sessionPath(id, "/processes/"+strconv.Itoa(pid)+"/output"), query: q, accept: api.StreamMIME})
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if opened != nil {
		opened()
	}
	return eachLine(ctx, c, resp, "output", fn)
}
