package execution

import (
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/containerd/errdefs"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/isolation"
	"github.com/sandboxd/sandboxd/store"
)

// fakeHistory is the store's history in memory.
type fakeHistory struct {
	mu    sync.Mutex
	execs []store.Executed
}

func (h *fakeHistory) AddExecutions(items []store.Executed) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.execs = append(h.execs, items...)
	return nil
}

func (h *fakeHistory) Execution(sid, eid string) (*store.Execution, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, it := range h.execs {
		if it.SessionID == sid && it.Execution.ID == eid {
			return it.Execution, nil
		}
	}
	return nil, errdefs.ErrNotFound
}

// Executions are newest first, as the store answers.
func (h *fakeHistory) Executions(sid string, limit int) ([]store.Execution, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []store.Execution
	for i := len(h.execs) - 1; i >= 0; i-- {
		if h.execs[i].SessionID == sid && (limit == 0 || len(out) < limit) {
			out = append(out, *h.execs[i].Execution)
		}
	}
	return out, nil
}

// fakeSession is a session as the book sees it.
type fakeSession struct {
	mu    sync.Mutex
	rec   store.Record
	lives Lives
}

func (s *fakeSession) ID() string    { return s.rec.ID }
func (s *fakeSession) Lives() *Lives { return &s.lives }
func (s *fakeSession) Update(f func(*store.Record)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f(&s.rec)
}

func newTestBook(t *testing.T, kept bool) (*Book, *fakeHistory) {
	h := &fakeHistory{}
	n := 0
	b := NewBook(h, Options{
		MaxOutput: 1 << 10, MaxAnswer: 1 << 12, RecordBytes: 1 << 12,
		NewID: func() string { n++; return fmt.Sprintf("e%d", n) },
		Now:   func() time.Time { return time.Date(2026, 1, 1, 0, 0, n, 0, time.UTC) },
		Kept:  func(Session) bool { return kept }, OnWriteError: func() {},
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	t.Cleanup(b.Close)
	return b, h
}

// TestBookRun: an execution is found live while it runs, with its output
// so far, then in the history; the session counts it.
func TestBookRun(t *testing.T) {
	b, _ := newTestBook(t, true)
	s := &fakeSession{rec: store.Record{ID: "s1"}}
	e, out := b.Start("s1", 1000, &api.ExecRequest{Language: api.LanguagePython, Code: "print(1)"}, nil)
	got := b.Run(s, e, out, func() *api.Execution {
		out.Add(api.EventStdout, "1\n")
		live, err := b.Execution(s, e.ID)
		if err != nil || live.Status != api.StatusRunning || live.Stdout != "1\n" {
			t.Errorf("while it runs: %+v, %v", live, err)
		}
		list, err := b.Executions(s, 0)
		if err != nil || len(list) != 1 || list[0].Status != api.StatusRunning || list[0].ExitCode != nil {
			t.Errorf("list while it runs: %+v, %v", list, err)
		}
		e.Stdout, e.Stderr = out.Text()
		e.Status = api.StatusOK
		return e
	})
	if got.Stdout != "1\n" || s.rec.ExecCount != 1 || s.lives.Get(e.ID) != nil {
		t.Fatalf("after: %+v, count %d", got, s.rec.ExecCount)
	}
	kept, err := b.Execution(s, e.ID)
	if err != nil || kept.Status != api.StatusOK || kept.Stdout != "1\n" || *kept.CallerUID != 1000 {
		t.Fatalf("from the history: %+v, %v", kept, err)
	}
	list, err := b.Executions(s, 0)
	if err != nil || len(list) != 1 || list[0].ExitCode == nil {
		t.Fatalf("list: %+v, %v", list, err)
	}
	if _, err := b.Execution(s, "nope"); !errdefs.IsNotFound(err) {
		t.Fatalf("unknown execution: %v", err)
	}
}

// TestBookRunNotKept: the execution of a session deleted while it ran
// goes to no history.
func TestBookRunNotKept(t *testing.T) {
	b, h := newTestBook(t, false)
	s := &fakeSession{rec: store.Record{ID: "s1"}}
	e, out := b.Start("s1", 0, &api.ExecRequest{Language: api.LanguageShell, Code: "true"}, nil)
	b.Run(s, e, out, func() *api.Execution { return e })
	b.rec.Flush()
	if len(h.execs) != 0 {
		t.Fatalf("recorded: %+v", h.execs)
	}
}

// TestCaptureBudget: each stream is capped, the whole answer is bounded,
// and what is dropped is said (truncated).
func TestCaptureBudget(t *testing.T) {
	var events []api.Event
	c := NewCapture(8, 12, func(ev api.Event) { events = append(events, ev) })
	c.Add(api.EventStdout, strings.Repeat("o", 10))
	c.Add(api.EventStderr, strings.Repeat("e", 10))
	c.Display(api.Output{MIME: "text/plain", Data: "x"})
	stdout, stderr := c.Text()
	if stdout != "oooooooo" || stderr != "eeee" || len(events) != 2 {
		t.Fatalf("stdout %q stderr %q events %d", stdout, stderr, len(events))
	}
	r := "result"
	e := &api.Execution{Result: &r}
	c.Finish(e, false)
	if !e.Truncated || *e.Result != "" || len(e.Outputs) != 0 {
		t.Fatalf("finished: %+v", e)
	}
}

// TestUndelivered: an execution a daemon restart lost is recorded as
// lost, saying how it ended.
func TestUndelivered(t *testing.T) {
	b, h := newTestBook(t, true)
	s := &fakeSession{rec: store.Record{ID: "s1"}}
	b.Undelivered(s, &isolation.ExecResult{ID: "x", Status: api.StatusOK, Duration: time.Second})
	b.rec.Flush()
	if len(h.execs) != 1 || h.execs[0].Execution.Status != api.StatusLost || s.rec.ExecCount != 1 ||
		!strings.Contains(h.execs[0].Execution.Error.Value, "ended ok") {
		t.Fatalf("recorded: %+v", h.execs)
	}
}
