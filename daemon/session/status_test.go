package session

import (
	"errors"
	"fmt"
	"testing"

	"github.com/containerd/errdefs"

	"github.com/sandboxd/sandboxd/store"
)

// box stands for a sandbox: the session only holds it.
type box struct{ id string }

var statuses = []Status{Running, Stopped, Failed, Paused}

// TestTransitions tries every move from every status against the
// diagram, written out here apart from the table: a move it allows
// changes status and reason, any other is a TransitionError and changes
// nothing.
func TestTransitions(t *testing.T) {
	legal := map[[2]Status]bool{
		{Running, Running}: true, // a new session's first start
		{Running, Stopped}: true,
		{Running, Failed}:  true,
		{Running, Paused}:  true,
		{Paused, Running}:  true,
		{Paused, Stopped}:  true,
		{Paused, Failed}:   true,
		{Stopped, Running}: true,
		{Stopped, Failed}:  true, // its start failed
		{Failed, Running}:  true,
		{Failed, Failed}:   true, // a start of a failed session failed again
	}
	for _, from := range statuses {
		for _, to := range statuses {
			t.Run(fmt.Sprintf("%s to %s", from, to), func(t *testing.T) {
				s := Load[*box](store.Record{ID: "s", Status: string(from), Reason: "before"})
				s.mu.Lock()
				err := s.transition(to, "after")
				s.mu.Unlock()
				rec := s.Snapshot()
				if legal[[2]Status{from, to}] {
					if err != nil || rec.Status != string(to) || rec.Reason != "after" {
						t.Fatalf("allowed move: err %v, now %s (%q)", err, rec.Status, rec.Reason)
					}
					return
				}
				var te *TransitionError
				if !errors.As(err, &te) || te.From != from || te.To != to || !errdefs.IsConflict(err) {
					t.Fatalf("refused move: err %v", err)
				}
				if rec.Status != string(from) || rec.Reason != "before" {
					t.Fatalf("a refused move changed the session: %s (%q)", rec.Status, rec.Reason)
				}
			})
		}
	}
}

// TestStatusStrings: the statuses are the API's and the store's strings.
func TestStatusStrings(t *testing.T) {
	for s, want := range map[Status]string{Running: "running", Stopped: "stopped", Failed: "failed", Paused: "paused"} {
		if string(s) != want {
			t.Errorf("%s is %q, want %q", want, s, want)
		}
	}
}

// TestNewIsRunning: a new session is running before its first sandbox,
// whatever the record it was made from said; Load keeps the store's.
func TestNewIsRunning(t *testing.T) {
	s := New[*box](store.Record{ID: "s", Status: "failed", Reason: "old"})
	if st, _ := s.Status(); st != Running || s.Snapshot().Reason != "" {
		t.Fatalf("new session: %s %q", st, s.Snapshot().Reason)
	}
	if s.Sandbox() != nil {
		t.Fatal("a new session has a sandbox")
	}
	l := Load[*box](store.Record{ID: "s", Status: "failed", Reason: "old"})
	if st, _ := l.Status(); st != Failed || l.Snapshot().Reason != "old" {
		t.Fatalf("loaded session: %s %q", st, l.Snapshot().Reason)
	}
}

// TestUpdateKeepsState: Update changes the other fields; status, reason
// and the pause clock stay the session's.
func TestUpdateKeepsState(t *testing.T) {
	s := New[*box](store.Record{ID: "s"})
	s.Update(func(r *store.Record) {
		r.ExecCount = 3
		r.Status, r.Reason = "stopped", "sneaked"
		r.PausedS = 9
	})
	rec := s.Snapshot()
	if rec.ExecCount != 3 || rec.Status != "running" || rec.Reason != "" || rec.PausedS != 0 {
		t.Fatalf("after Update: %+v", rec)
	}
}
