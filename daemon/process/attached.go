package process

import (
	"context"
	"encoding/base64"
	"errors"
	"io"
	"sync"
	"time"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/isolation"
)

// An attached process is one whose streams the daemon holds (started with
// stdin or a terminal): its input is written through the API, its stdout
// and stderr are kept apart, and its output is numbered by byte from its
// start and kept (the last keepOutput bytes), so that a caller follows it
// from its start, or from now, or from where it stopped reading. It ends
// with its sandbox, and with the daemon that holds its streams: a daemon
// restart leaves it reading EOF and writing to a pipe nobody reads.

// keepOutput bounds the output kept of one attached process.
const keepOutput = 1 << 20

// maxAttached bounds a session's attached processes that run.
const maxAttached = 64

// streamGrace is how long an ended process's output is read for.
const streamGrace = 250 * time.Millisecond

// keepEnded is how many ended attached processes a session keeps, for
// their exit codes and last output.
const keepEnded = 16

// piece is one read of a process's output.
type piece struct {
	stream string
	data   []byte
	off    int64
}

// attached is one attached process.
type attached struct {
	info api.Process
	p    *isolation.Process

	mu sync.Mutex
	// out is the output kept, oldest first; lost counts the bytes before
	// it that were let go; next is the offset of the next byte.
	out  []piece
	kept int64
	lost int64
	next int64
	exit *int
	// changed is closed (and replaced) when output comes or it ends.
	changed chan struct{}
	// stdinClosed says its input was closed (EOF sent).
	stdinClosed bool
	endedAt     time.Time
}

func newAttached(info api.Process, p *isolation.Process) *attached {
	return &attached{info: info, p: p, changed: make(chan struct{})}
}

// pump reads the process's streams until they end, then waits for it and
// notes its exit code. done runs last.
func (a *attached) pump(done func(code int)) {
	var wg sync.WaitGroup
	read := func(stream string, r io.Reader) {
		defer wg.Done()
		buf := make([]byte, 32<<10)
		for {
			n, err := r.Read(buf)
			if n > 0 {
				a.add(stream, buf[:n])
			}
			if err != nil {
				return
			}
		}
	}
	if a.info.TTY != nil {
		wg.Add(1)
		go read(api.StreamPTY, a.p.Stdout())
	} else {
		wg.Add(2)
		go read(api.StreamStdout, a.p.Stdout())
		go read(api.StreamStderr, a.p.Stderr())
	}
	code, _ := a.p.Wait()
	// Its streams end once nothing holds their other side; a child it
	// left running may hold them on. What it wrote before it ended is
	// read within the grace; then the streams close.
	drained := make(chan struct{})
	go func() { wg.Wait(); close(drained) }()
	select {
	case <-drained:
	case <-time.After(streamGrace):
		a.p.Close()
		<-drained
	}
	a.p.Close()
	a.mu.Lock()
	a.exit = &code
	a.endedAt = time.Now()
	a.wake()
	a.mu.Unlock()
	done(code)
}

// add keeps one read, letting go of the oldest beyond keepOutput.
func (a *attached) add(stream string, b []byte) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.out = append(a.out, piece{stream: stream, data: append([]byte(nil), b...), off: a.next})
	a.next += int64(len(b))
	a.kept += int64(len(b))
	for a.kept > keepOutput && len(a.out) > 1 {
		a.kept -= int64(len(a.out[0].data))
		a.lost += int64(len(a.out[0].data))
		a.out = a.out[1:]
	}
	a.wake()
}

// wake tells the followers; the caller holds a.mu.
func (a *attached) wake() {
	close(a.changed)
	a.changed = make(chan struct{})
}

// From are where a follower starts.
const (
	FromStart = -1
	FromNow   = -2
)

// follow sends the output from offset from (FromStart, FromNow or a byte
// offset), then, with follow, what comes until the process ends (its exit
// code last) or ctx ends.
func (a *attached) follow(ctx context.Context, from int64, follow bool, send func(api.ProcessOutput) error) error {
	a.mu.Lock()
	switch from {
	case FromStart:
		from = 0
	case FromNow:
		from = a.next
	}
	first := true
	a.mu.Unlock()
	for {
		a.mu.Lock()
		var batch []api.ProcessOutput
		lost := int64(0)
		if first && from < a.lost {
			lost = a.lost - from
		}
		for _, p := range a.out {
			end := p.off + int64(len(p.data))
			if end <= from {
				continue
			}
			data := p.data
			off := p.off
			if from > p.off {
				data = data[from-p.off:]
				off = from
			}
			batch = append(batch, api.ProcessOutput{Stream: p.stream, DataB64: base64.StdEncoding.EncodeToString(data), Offset: off})
			from = end
		}
		exit, changed, next := a.exit, a.changed, a.next
		a.mu.Unlock()
		if len(batch) > 0 && lost > 0 {
			batch[0].Lost = lost
		}
		first = false
		for _, o := range batch {
			if err := send(o); err != nil {
				return err
			}
		}
		if exit != nil && from >= next {
			return send(api.ProcessOutput{ExitCode: exit, Offset: next})
		}
		if !follow {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-changed:
		}
	}
}

// write sends input to the process (its terminal, with one); eof closes
// its input after (not a terminal's: a terminal has no EOF but ^D).
func (a *attached) write(b []byte, eof bool) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.exit != nil {
		return errEnded
	}
	if a.stdinClosed {
		return errStdinClosed
	}
	w := a.p.Stdin()
	if w == nil {
		return errNoStdin
	}
	if len(b) > 0 {
		if _, err := w.Write(b); err != nil {
			return err
		}
	}
	if eof && a.info.TTY == nil {
		a.stdinClosed = true
		return w.Close()
	}
	return nil
}

var (
	errEnded       = errors.New("the process has ended")
	errStdinClosed = errors.New("the process's input is closed")
	errNoStdin     = errors.New("the process has no input")
)

// running says whether it runs.
func (a *attached) running() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.exit == nil
}

// snapshot is the process as the API lists it.
func (a *attached) snapshot() api.Process {
	a.mu.Lock()
	defer a.mu.Unlock()
	p := a.info
	p.ExitCode = a.exit
	return p
}
