package client

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/sandboxd/sandboxd/api"
)

// Attached is a process in a session's sandbox whose standard streams
// are this connection's (sandboxctl exec -i / -it).
type Attached struct {
	conn net.Conn
	r    *bufio.Reader
	wmu  sync.Mutex
}

// Attach starts req's process in session id and attaches to it. The
// caller sends its input (Write, CloseStdin), resizes its terminal, and
// reads its output and exit status with Wait; Close ends the process.
func (c *Client) Attach(ctx context.Context, id string, req *api.AttachRequest) (*Attached, error) {
	conn, err := c.dial(ctx)
	if err != nil {
		return nil, c.connError(err)
	}
	// The handshake, not the session, is bounded by ctx.
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	body, err := json.Marshal(req)
	if err != nil {
		conn.Close()
		return nil, err
	}
	hr, err := http.NewRequestWithContext(ctx, "POST", "http://sandboxd"+sessionPath(id, "/attach"), strings.NewReader(string(body)))
	if err != nil {
		conn.Close()
		return nil, err
	}
	hr.Header.Set("Content-Type", "application/json")
	hr.Header.Set("Connection", "Upgrade")
	hr.Header.Set("Upgrade", api.AttachUpgrade)
	if rid, ok := ctx.Value(requestIDKey{}).(string); ok {
		hr.Header.Set(api.RequestIDHeader, rid)
	}
	if err := hr.Write(conn); err != nil {
		conn.Close()
		return nil, c.connError(err)
	}
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, hr)
	if err != nil {
		conn.Close()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("attach to session %s: %w", id, err)
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		defer conn.Close()
		defer resp.Body.Close()
		return nil, failure(resp)
	}
	if !stop() && ctx.Err() != nil {
		conn.Close()
		return nil, ctx.Err()
	}
	return &Attached{conn: conn, r: br}, nil
}

// Write sends input to the process.
func (a *Attached) Write(p []byte) (int, error) {
	for off := 0; off < len(p); off += api.MaxFrame {
		if err := a.send(api.FrameStdin, p[off:min(off+api.MaxFrame, len(p))]); err != nil {
			return off, err
		}
	}
	return len(p), nil
}

// CloseStdin ends the process's input (EOF; with a terminal, ^D).
func (a *Attached) CloseStdin() error { return a.send(api.FrameCloseStdin, nil) }

// Resize sets the size of the process's terminal.
func (a *Attached) Resize(rows, cols uint16) error {
	return a.send(api.FrameResize, api.ResizePayload(rows, cols))
}

func (a *Attached) send(typ byte, p []byte) error {
	a.wmu.Lock()
	defer a.wmu.Unlock()
	return api.WriteFrame(a.conn, typ, p)
}

// Wait copies the process's output to stdout and stderr until it ends,
// and returns its exit status (128+N for a signal N).
func (a *Attached) Wait(stdout, stderr io.Writer) (int, error) {
	var buf []byte
	for {
		typ, p, err := api.ReadFrame(a.r, buf)
		if err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				err = errors.New("the daemon closed the connection before the process ended")
			}
			return -1, err
		}
		buf = p[:0]
		switch typ {
		case api.FrameStdout:
			if _, err := stdout.Write(p); err != nil {
				return -1, err
			}
		case api.FrameStderr:
			if _, err := stderr.Write(p); err != nil {
				return -1, err
			}
		case api.FrameExit:
			code, ok := api.ParseExit(p)
			if !ok {
				return -1, errors.New("a bad exit frame from the daemon")
			}
			return code, nil
		}
	}
}

// Close hangs up: a process still running ends.
func (a *Attached) Close() error { return a.conn.Close() }
