// Package client is the Go client of the sandboxd API, used by sandboxctl
// and by Go programs. Errors come back in the daemon's classes:
// errdefs.IsNotFound(err) holds for a missing session on both sides.
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"syscall"

	"github.com/containerd/errdefs"

	"github.com/sandboxd/sandboxd/api"
)

// DefaultSocket is where the daemon listens unless told otherwise.
const DefaultSocket = "/run/sandboxd/sandboxd.sock"

// SocketEnv names the environment variable that overrides DefaultSocket.
const SocketEnv = "SANDBOXD_SOCKET"

// Client talks to one daemon.
type Client struct {
	// socket names the daemon in messages: its socket's path, or the
	// host's URL (NewDialer).
	socket string
	hc     *http.Client
	// dial connects to the daemon.
	dial func(ctx context.Context) (net.Conn, error)
}

// New returns a client of the daemon at socket ("" for $SANDBOXD_SOCKET or
// the default).
func New(socket string) *Client {
	if socket == "" {
		socket = os.Getenv(SocketEnv)
	}
	if socket == "" {
		socket = DefaultSocket
	}
	return NewDialer(socket, func(ctx context.Context) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", socket)
	})
}

// NewDialer returns a client of the daemon that dial connects to (through
// ssh, say: NewHost); name names it in messages.
func NewDialer(name string, dial func(ctx context.Context) (net.Conn, error)) *Client {
	tr := &http.Transport{
		DialContext:         func(ctx context.Context, _, _ string) (net.Conn, error) { return dial(ctx) },
		MaxIdleConnsPerHost: 16,
	}
	return &Client{socket: name, hc: &http.Client{Transport: tr}, dial: dial}
}

// NewWithHTTPClient returns a client that sends requests through hc, for
// tests with a fake transport.
func NewWithHTTPClient(socket string, hc *http.Client) *Client {
	return &Client{socket: socket, hc: hc, dial: func(ctx context.Context) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", socket)
	}}
}

// Socket is the socket path this client uses.
func (c *Client) Socket() string { return c.socket }

// Close drops idle connections.
func (c *Client) Close() { c.hc.CloseIdleConnections() }

// request is one API call.
type request struct {
	method string
	path   string
	query  url.Values
	body   io.Reader
	json   any
	accept string
	header http.Header // more headers
	// answers are statuses beside 2xx whose body is an answer, not an
	// error (health's 503).
	answers []int
}

// send makes a call and returns the answer if it is 2xx; otherwise the
// error body, in its class, with the answer's request id and retry hint.
func (c *Client) send(ctx context.Context, r request) (*http.Response, error) {
	body := r.body
	if r.json != nil {
		b, err := json.Marshal(r.json)
		if err != nil {
			return nil, err
		}
		body = bytes.NewReader(b)
	}
	// r.path is escaped (url.PathEscape of each part): a template's
	// "uid/name" travels as one segment, its '/' as %2F.
	u := url.URL{Scheme: "http", Host: "sandboxd", Path: r.path, RawPath: r.path, RawQuery: r.query.Encode()}
	if p, err := url.PathUnescape(r.path); err == nil {
		u.Path = p
	}
	req, err := http.NewRequestWithContext(ctx, r.method, u.String(), body)
	if err != nil {
		return nil, err
	}
	if r.json != nil {
		req.Header.Set("Content-Type", "application/json")
	} else if r.body != nil {
		req.Header.Set("Content-Type", "application/octet-stream")
	}
	if r.accept != "" {
		req.Header.Set("Accept", r.accept)
	}
	for k, v := range r.header {
		req.Header[k] = v
	}
	if id, ok := ctx.Value(requestIDKey{}).(string); ok {
		req.Header.Set(api.RequestIDHeader, id)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, c.connError(err)
	}
	if resp.StatusCode/100 == 2 || slices.Contains(r.answers, resp.StatusCode) {
		return resp, nil
	}
	defer resp.Body.Close()
	return nil, failure(resp)
}

// failure is the error a non-2xx answer carries in its body, in its class.
func failure(resp *http.Response) error {
	var eb api.ErrorBody
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if json.Unmarshal(b, &eb) != nil {
		eb.Error.Message = string(bytes.TrimSpace(b))
	}
	return errorOf(resp, eb)
}

// call makes a call and decodes a JSON answer into out (if not nil).
func (c *Client) call(ctx context.Context, r request, out any) error {
	resp, err := c.send(ctx, r)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if out == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		return nil
	}
	if err := decode(resp.Body, out); err != nil {
		return fmt.Errorf("bad answer from sandboxd: %w", err)
	}
	return nil
}

// connError says in one sentence why the daemon could not be reached.
func (c *Client) connError(err error) error {
	switch {
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return err
	case errors.Is(err, syscall.EACCES), errors.Is(err, os.ErrPermission):
		return errdefs.ErrUnavailable.WithMessage(fmt.Sprintf("permission denied on %s: run as root or as a member of the sandboxd group", c.socket))
	case errors.Is(err, syscall.ENOENT), errors.Is(err, syscall.ECONNREFUSED):
		return errdefs.ErrUnavailable.WithMessage(fmt.Sprintf("cannot connect to sandboxd at %s: is it running?", c.socket))
	}
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return errdefs.ErrUnavailable.WithMessage(fmt.Sprintf("cannot connect to sandboxd at %s: is it running? (%v)", c.socket, op.Err))
	}
	return fmt.Errorf("talking to sandboxd at %s: %w", c.socket, err)
}
