package agent

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"time"
)

// MaxLine bounds one line from the agent. The agent is untrusted (it shares
// a uid with user code), so the daemon never reads an unbounded line.
const MaxLine = 64 << 20

// ErrUnresponsive means the agent did not answer in time; the connection is
// no longer in step and the sandbox must be restarted.
var ErrUnresponsive = errors.New("the sandbox agent stopped answering")

// Conn is the daemon's connection to one sandbox's agent. It is not safe
// for concurrent use: the owner serialises executions.
type Conn struct {
	c  net.Conn
	sc *bufio.Scanner
	// version is the agent's protocol version, known after Ping.
	version int
}

// Dial connects to the agent's socket, retrying until ctx ends: the agent may
// still be starting, though the listener already accepts.
func Dial(ctx context.Context, path string) (*Conn, error) {
	var d net.Dialer
	for {
		c, err := d.DialContext(ctx, "unix", path)
		if err == nil {
			sc := bufio.NewScanner(c)
			sc.Buffer(make([]byte, 0, 64<<10), MaxLine)
			return &Conn{c: c, sc: sc}, nil
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("connect to agent: %w", err)
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// Close closes the connection; the agent waits for the next one.
func (a *Conn) Close() error { return a.c.Close() }

// Ping checks the agent answers, within the deadline of ctx, and returns
// its pong; with ready, once its interpreter has finished starting. It
// learns the agent's protocol version (see Version) and fails with
// ErrProtocol if this Conn cannot speak it.
func (a *Conn) Ping(ctx context.Context, ready bool) (*Message, error) {
	if dl, ok := ctx.Deadline(); ok {
		_ = a.c.SetDeadline(dl)
		defer a.c.SetDeadline(time.Time{})
	}
	if err := a.send(Request{Op: OpPing, Ready: ready}); err != nil {
		return nil, err
	}
	m, err := a.read()
	if err != nil {
		return nil, err
	}
	if m.Type != TypePong {
		return nil, fmt.Errorf("agent answered %q to a ping", m.Type)
	}
	a.version = m.Protocol
	if a.version == 0 {
		a.version = 1 // agents of version 1 do not say
	}
	if a.version < MinProtocolVersion || a.version > ProtocolVersion {
		return nil, fmt.Errorf("%w: the agent's is %d, the daemon speaks %d to %d", ErrProtocol, a.version, MinProtocolVersion, ProtocolVersion)
	}
	return m, nil
}

// Version is the agent's protocol version, learned by the last Ping (0
// before). Every version from MinProtocolVersion on takes the same
// requests today; where they come to differ, the Conn picks by it.
func (a *Conn) Version() int { return a.version }

// Exec runs one request. onOutput gets each stdout/stderr chunk as it comes.
// The agent enforces the timeout itself; wait bounds how long the daemon
// waits for the final answer beyond that, in case the agent is stuck.
func (a *Conn) Exec(req Request, wait time.Duration, onOutput func(kind, data string)) (*Message, error) {
	req.Op = OpExec
	_ = a.c.SetDeadline(time.Now().Add(wait))
	defer a.c.SetDeadline(time.Time{})
	if err := a.send(req); err != nil {
		return nil, err
	}
	for {
		m, err := a.read()
		if err != nil {
			return nil, err
		}
		switch m.Type {
		case TypeStdout, TypeStderr:
			onOutput(m.Type, m.Data)
		case TypeDone:
			return m, nil
		case TypeError:
			return nil, fmt.Errorf("agent: %s", m.Message)
		}
	}
}

func (a *Conn) send(r Request) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	_, err = a.c.Write(append(b, '\n'))
	return a.classify(err)
}

func (a *Conn) read() (*Message, error) {
	if !a.sc.Scan() {
		err := a.sc.Err()
		if err == nil {
			err = errors.New("agent closed the connection")
		}
		return nil, a.classify(err)
	}
	var m Message
	if err := json.Unmarshal(a.sc.Bytes(), &m); err != nil {
		return nil, fmt.Errorf("agent sent a bad line: %w", err)
	}
	return &m, nil
}

func (a *Conn) classify(err error) error {
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return ErrUnresponsive
	}
	return err
}
