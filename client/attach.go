package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"sync"

	"github.com/sandboxd/sandboxd/api"
)

// Attached is a process in a session's sandbox whose standard streams
// are this connection's (sandboxctl exec -i / -it).
type Attached struct {
	conn *bufferedConn
	wmu  sync.Mutex
}

// Attach starts req's process in session id and attaches to it. The
// caller sends its input (Write, CloseStdin), resizes its terminal, and
// reads its output and exit status with Wait; Close ends the process.
func (c *Client) Attach(ctx context.Context, id string, req *api.AttachRequest) (*Attached, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	hr, err := http.NewRequestWithContext(ctx, "POST", "http://sandboxd"+sessionPath(id, "/attach"), bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	hr.Header.Set("Content-Type", "application/json")
	hr.Header.Set("Upgrade", api.AttachUpgrade)
	if rid, ok := ctx.Value(requestIDKey{}).(string); ok {
		hr.Header.Set(api.RequestIDHeader, rid)
	}
	conn, err := c.upgrade(ctx, hr, "attach to session "+id, failure)
	if err != nil {
		return nil, err
	}
	return &Attached{conn: conn}, nil
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
		typ, p, err := api.ReadFrame(a.conn, buf)
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
