package client

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"
)

// dialCommand starts argv and returns its standard input and output as a
// connection (ssh … sandboxctl dial-stdio). The command outlives ctx,
// which bounds only its start.
func dialCommand(ctx context.Context, name string, argv []string) (net.Conn, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, err
	}
	c := &cmdConn{name: name, in: inW, out: outR}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, &c.stderr
	err = cmd.Start()
	inR.Close()
	outW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		return nil, fmt.Errorf("cannot reach sandboxd at %s: %w", name, err)
	}
	c.cmd = cmd
	c.done = make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(c.done)
	}()
	return c, nil
}

// cmdConn is a command's standard streams as a net.Conn.
type cmdConn struct {
	name    string
	cmd     *exec.Cmd
	in, out *os.File
	stderr  lockedBuffer
	done    chan struct{}
	once    sync.Once
}

func (c *cmdConn) Read(p []byte) (int, error) {
	n, err := c.out.Read(p)
	if errors.Is(err, io.EOF) {
		// The command ended: if it failed, its last words say why (ssh:
		// no such host, refused key; the far side: no daemon).
		select {
		case <-c.done:
		case <-time.After(time.Second):
		}
		if c.cmd.ProcessState != nil && !c.cmd.ProcessState.Success() {
			if msg := c.stderr.lastLine(); msg != "" {
				return n, fmt.Errorf("sandboxd at %s: %s", c.name, msg)
			}
		}
	}
	return n, err
}

func (c *cmdConn) Write(p []byte) (int, error) { return c.in.Write(p) }

// CloseWrite ends the command's input, keeping its output.
func (c *cmdConn) CloseWrite() error { return c.in.Close() }

// Close ends the connection: the command's streams close (ssh ends on
// its own), and it is killed if it lingers.
func (c *cmdConn) Close() error {
	c.once.Do(func() {
		c.in.Close()
		c.out.Close()
		go func() {
			select {
			case <-c.done:
			case <-time.After(5 * time.Second):
				_ = c.cmd.Process.Kill()
			}
		}()
	})
	return nil
}

func (c *cmdConn) LocalAddr() net.Addr  { return cmdAddr(c.name) }
func (c *cmdConn) RemoteAddr() net.Addr { return cmdAddr(c.name) }

func (c *cmdConn) SetDeadline(t time.Time) error {
	return errors.Join(c.in.SetWriteDeadline(t), c.out.SetReadDeadline(t))
}
func (c *cmdConn) SetReadDeadline(t time.Time) error  { return c.out.SetReadDeadline(t) }
func (c *cmdConn) SetWriteDeadline(t time.Time) error { return c.in.SetWriteDeadline(t) }

type cmdAddr string

func (a cmdAddr) Network() string { return "cmd" }
func (a cmdAddr) String() string  { return string(a) }

// lockedBuffer keeps the end of a command's error output.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.b.Len() > 64<<10 {
		l.b.Reset()
	}
	return l.b.Write(p)
}

func (l *lockedBuffer) lastLine() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := strings.TrimSpace(l.b.String())
	return s[strings.LastIndexByte(s, '\n')+1:]
}
