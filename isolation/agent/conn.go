package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// MaxLine bounds one line from the agent. The agent is untrusted (it shares
// a uid with user code), so the daemon never reads an unbounded line.
const MaxLine = 64 << 20

// ErrUnresponsive means the agent did not answer in time; the connection is
// no longer in step and the sandbox must be restarted.
var ErrUnresponsive = errors.New("the sandbox agent stopped answering")

// ErrUnsupported means the agent is too old for a request: it was started
// by an older daemon, and only restarting it with this daemon's agent
// brings the request within reach.
var ErrUnsupported = errors.New("the sandbox agent is too old for this request")

// interruptVersion is the first protocol version with OpInterrupt.
const interruptVersion = 3

// displayVersion is the first protocol version with TypeDisplay lines.
const displayVersion = 9

// Conn is the daemon's connection to one sandbox's agent. It is not safe
// for concurrent use, but for Interrupt: the owner serialises executions
// and pings, and Interrupt comes from another goroutine while Exec reads.
type Conn struct {
	c     net.Conn
	lines *lineReader
	// wmu serialises writes, each a whole line with its own write
	// deadline: Exec's request and Interrupt's line can meet. Reads have
	// only one owner at a time, and their own deadline.
	wmu sync.Mutex
	// version is the agent's protocol version, known after Ping; atomic
	// since Interrupt reads it beside a health check's Ping.
	version atomic.Int64

	// sentMu guards sentID, the id of the last execution whose request
	// was written, and sentCh, closed (and replaced) when it changes:
	// Interrupt waits for its execution's request (see sentWait).
	sentMu sync.Mutex
	sentID string
	sentCh chan struct{}
}

// sentWait bounds how long Interrupt waits for its execution's request to
// be written. The owner marks an execution running just before Exec
// writes its request, and an interrupt written first would find the agent
// idle, which drops it (the SDK's test saw that, on a loaded host): the
// execution would run on though Interrupt said it stopped it. An id whose
// request never comes is sent after the wait, and dropped.
const sentWait = 2 * time.Second

// Dial connects to the agent's socket, retrying until ctx ends: the agent may
// still be starting, though the listener already accepts.
func Dial(ctx context.Context, path string) (*Conn, error) {
	var d net.Dialer
	for {
		// A connect to a Unix socket never waits (a full backlog fails
		// with EAGAIN), so each dial goes without ctx's deadline: one made
		// as it runs out fails as "i/o timeout", hiding why the socket did
		// not answer (not there, refusing, or slow to accept), which the
		// caller goes by.
		c, err := d.DialContext(context.WithoutCancel(ctx), "unix", path)
		if err == nil {
			return &Conn{c: c, lines: newLineReader(c, MaxLine)}, nil
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
	dl, _ := ctx.Deadline() // zero: none
	_ = a.c.SetReadDeadline(dl)
	defer a.c.SetReadDeadline(time.Time{})
	if err := a.send(Request{Op: OpPing, Ready: ready}, dl); err != nil {
		return nil, err
	}
	m, err := a.read()
	if err != nil {
		return nil, err
	}
	if m.Type != TypePong {
		return nil, fmt.Errorf("agent answered %q to a ping", m.Type)
	}
	v := m.Protocol
	if v == 0 {
		v = 1 // agents of version 1 do not say
	}
	a.version.Store(int64(v))
	if v < MinProtocolVersion || v > ProtocolVersion {
		return nil, fmt.Errorf("%w: the agent's is %d, the daemon speaks %d to %d", ErrProtocol, v, MinProtocolVersion, ProtocolVersion)
	}
	return m, nil
}

// Version is the agent's protocol version, learned by the last Ping (0
// before). Every version from MinProtocolVersion on takes the same pings
// and executions; Interrupt needs 3.
func (a *Conn) Version() int { return int(a.version.Load()) }

// Exec runs one request. onOutput gets each stdout/stderr chunk as it
// comes, and onDisplay (if not nil) each output the code displayed, in
// order with them (agents from version 9 on); the answer's Outputs are
// the others. The agent enforces the timeout itself; wait bounds how long
// the daemon waits for the final answer beyond that, in case the agent
// is stuck.
func (a *Conn) Exec(req Request, wait time.Duration, onOutput func(kind, data string), onDisplay func(Output)) (*Message, error) {
	req.Op = OpExec
	if (req.Context != "" && req.Context != ContextDefault) || req.Language == LanguageJavaScript {
		// An older agent would run the cell in its one interpreter, as
		// Python.
		if err := a.supports(contextVersion, "a code context"); err != nil {
			return nil, err
		}
	}
	if a.Version() < undoVersion {
		// Older agents park no copies (they would ignore the field).
		req.Checkpoints = 0
	}
	dl := time.Now().Add(wait)
	_ = a.c.SetReadDeadline(dl)
	defer a.c.SetReadDeadline(time.Time{})
	if err := a.send(req, dl); err != nil {
		return nil, err
	}
	a.markSent(req.ID)
	for {
		m, err := a.read()
		if err != nil {
			return nil, err
		}
		switch m.Type {
		case TypeStdout, TypeStderr:
			onOutput(m.Type, m.Data)
		case TypeDisplay:
			if m.Output != nil && onDisplay != nil {
				onDisplay(*m.Output)
			}
		case TypeDone:
			return m, nil
		case TypeError:
			return nil, fmt.Errorf("agent: %s", m.Message)
		}
	}
}

// Interrupt asks the agent to interrupt execution id while it runs
// (SIGINT to its process group, the kill after its grace: what a Python
// timeout does); the execution's answer, which Exec reads, then says
// StatusInterrupted. The agent answers nothing to it, and drops it if
// id has ended meanwhile. It may be called while another goroutine is in
// Exec. The write is bounded by ctx's deadline, else by interruptWait; one
// cut short (ErrUnresponsive) may leave half a line, which the agent
// refuses, and the execution then fails as out of step. Agents before
// version 3 know no interrupt: ErrUnsupported, and nothing is sent.
func (a *Conn) Interrupt(ctx context.Context, id string) error {
	if err := a.awaitSent(ctx, id); err != nil {
		return err
	}
	return a.sendBeside(ctx, Request{Op: OpInterrupt, ID: id}, interruptVersion, "interrupting an execution")
}

// markSent records that the request of execution id is written.
func (a *Conn) markSent(id string) {
	a.sentMu.Lock()
	defer a.sentMu.Unlock()
	a.sentID = id
	if a.sentCh != nil {
		close(a.sentCh)
		a.sentCh = nil
	}
}

// awaitSent waits until the request of execution id is written, at most
// sentWait (see there), or until ctx ends.
func (a *Conn) awaitSent(ctx context.Context, id string) error {
	timer := time.NewTimer(sentWait)
	defer timer.Stop()
	for {
		a.sentMu.Lock()
		if a.sentID == id {
			a.sentMu.Unlock()
			return nil
		}
		if a.sentCh == nil {
			a.sentCh = make(chan struct{})
		}
		ch := a.sentCh
		a.sentMu.Unlock()
		select {
		case <-ch:
		case <-timer.C:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// reclaimVersion is the first protocol version with OpReclaim.
const reclaimVersion = 6

// Reclaim has the agent kill the sandbox's process with the most resident
// memory (its OOM kill). It has no answer, and may be sent while another
// goroutine is in Exec, as Interrupt. Agents before version 6 answer
// ErrUnsupported, and nothing is sent.
func (a *Conn) Reclaim(ctx context.Context) error {
	return a.sendBeside(ctx, Request{Op: OpReclaim}, reclaimVersion, "reclaiming memory")
}

// sendBeside sends r, a request without an answer that may go out while
// another goroutine is in Exec, to an agent of protocol since or later
// (ErrUnsupported, and nothing sent, before; what names the request in
// that error). The write is bounded by ctx's deadline, else by
// interruptWait.
func (a *Conn) sendBeside(ctx context.Context, r Request, since int, what string) error {
	if err := a.supports(since, what); err != nil {
		return err
	}
	dl, ok := ctx.Deadline()
	if !ok {
		dl = time.Now().Add(interruptWait)
	}
	return a.send(r, dl)
}

// interruptWait bounds Interrupt's and Reclaim's write when their ctx
// does not. The line is short and the agent reads its socket while an
// execution runs: only a stuck agent makes it wait.
const interruptWait = 10 * time.Second

// send writes r as one line, within deadline (zero: none).
func (a *Conn) send(r Request, deadline time.Time) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	a.wmu.Lock()
	defer a.wmu.Unlock()
	_ = a.c.SetWriteDeadline(deadline)
	defer a.c.SetWriteDeadline(time.Time{})
	_, err = a.c.Write(append(b, '\n'))
	return a.classify(err)
}

func (a *Conn) read() (*Message, error) {
	line, err := a.lines.next()
	if errors.Is(err, io.EOF) {
		err = errors.New("agent closed the connection")
	}
	if err != nil {
		return nil, a.classify(err)
	}
	var m Message
	if err := json.Unmarshal(line, &m); err != nil {
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
