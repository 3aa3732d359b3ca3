package session

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/containerd/errdefs"

	"github.com/sandboxd/sandboxd/store"
)

// running is a new session with its sandbox up.
func running(t *testing.T) (*Session[*box], *box) {
	t.Helper()
	s := New[*box](store.Record{ID: "s", OwnerUID: 7})
	sb := &box{"s"}
	if err := s.SetRunning(sb); err != nil {
		t.Fatal(err)
	}
	return s, sb
}

func wantStatus(t *testing.T, s *Session[*box], want Status, reason string) {
	t.Helper()
	rec := s.Snapshot()
	if Status(rec.Status) != want || rec.Reason != reason {
		t.Fatalf("session is %s (%q), want %s (%q)", rec.Status, rec.Reason, want, reason)
	}
}

// TestBeginWaits: a second operation waits for the first to end; one
// whose caller gives up meanwhile is a conflict naming what is under way.
func TestBeginWaits(t *testing.T) {
	s, _ := running(t)
	if err := s.Begin(context.Background(), "stopping"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	err := s.Begin(ctx, "starting")
	if !errdefs.IsConflict(err) || s.Op() != "stopping" {
		t.Fatalf("a caller that gave up: %v, op %q", err, s.Op())
	}
	got := make(chan error)
	go func() { got <- s.Begin(context.Background(), "starting") }()
	select {
	case err := <-got:
		t.Fatalf("began while another operation was under way: %v", err)
	case <-time.After(20 * time.Millisecond):
	}
	s.End()
	if err := <-got; err != nil || s.Op() != "starting" {
		t.Fatalf("after End: %v, op %q", err, s.Op())
	}
	s.End()
}

// TestBeginDeleted: what waited for a deleted session's operation finds
// no session.
func TestBeginDeleted(t *testing.T) {
	s, _ := running(t)
	if err := s.Begin(context.Background(), "deleting"); err != nil {
		t.Fatal(err)
	}
	got := make(chan error)
	go func() { got <- s.Begin(context.Background(), "starting") }()
	s.SetDeleted()
	s.End()
	if err := <-got; !errdefs.IsNotFound(err) {
		t.Fatalf("begin on a deleted session: %v", err)
	}
}

// TestTryBegin never waits.
func TestTryBegin(t *testing.T) {
	s, _ := running(t)
	if !s.TryBegin("stopping") {
		t.Fatal("TryBegin refused an idle session")
	}
	if s.TryBegin("pausing") {
		t.Fatal("TryBegin began over another operation")
	}
	s.End()
	if s.Op() != "" {
		t.Fatalf("op %q after End", s.Op())
	}
	if err := s.WaitIdle(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !s.TryBegin("pausing") {
		t.Fatal("TryBegin refused after End")
	}
	s.End()
}

// TestClaimExec waits for an operation, takes the sandbox, tells the
// reset once, and refuses a session without a sandbox.
func TestClaimExec(t *testing.T) {
	s, sb := running(t)
	s.SetResetUntold()
	if !s.TryBegin("starting") {
		t.Fatal("TryBegin")
	}
	type claim struct {
		sb    *box
		reset bool
		err   error
	}
	got := make(chan claim)
	go func() {
		b, r, err := s.ClaimExec(context.Background())
		got <- claim{b, r, err}
	}()
	time.Sleep(10 * time.Millisecond)
	s.End()
	c := <-got
	if c.err != nil || c.sb != sb || !c.reset {
		t.Fatalf("claim: %+v", c)
	}
	if _, reset, _ := s.ClaimExec(context.Background()); reset {
		t.Fatal("the reset was told twice")
	}
	if running, idle := s.Idle(time.Now()); !running || idle {
		t.Fatalf("with executions under way: running %v idle %v", running, idle)
	}
	s.ReleaseExec()
	s.ReleaseExec()
	s.SetStopped("stopped by request")
	if _, _, err := s.ClaimExec(context.Background()); !errdefs.IsConflict(err) {
		t.Fatalf("claim of a stopped session: %v", err)
	}
}

// TestPauseResume: a paused session keeps its sandbox, refuses
// executions, and counts the pause apart from its lifetime.
func TestPauseResume(t *testing.T) {
	s, sb := running(t)
	if err := s.SetResumed(); err == nil {
		t.Fatal("resumed a running session")
	}
	if _, _, err := s.ClaimExec(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Pausable(); !errdefs.IsConflict(err) {
		t.Fatalf("pausable with an execution under way: %v", err)
	}
	s.ReleaseExec()
	if got, err := s.Pausable(); err != nil || got != sb {
		t.Fatalf("pausable: %v %v", got, err)
	}
	if err := s.SetPaused("paused by request"); err != nil {
		t.Fatal(err)
	}
	wantStatus(t, s, Paused, "paused by request")
	if s.Paused() != sb || s.Sandbox() != sb || s.Snapshot().PausedAt.IsZero() {
		t.Fatal("a paused session lost its sandbox or its pause time")
	}
	if got, err := s.Pausable(); err != nil || got != nil {
		t.Fatalf("pausable when paused: %v %v", got, err)
	}
	if _, _, err := s.ClaimExec(context.Background()); !errors.Is(err, ErrPaused) {
		t.Fatalf("claim of a paused session: %v", err)
	}
	time.Sleep(2 * time.Millisecond) // a pause the wall clock sees
	if err := s.SetResumed(); err != nil {
		t.Fatal(err)
	}
	wantStatus(t, s, Running, "")
	if rec := s.Snapshot(); !rec.PausedAt.IsZero() || rec.PausedS <= 0 || rec.LastUsedAt.IsZero() {
		t.Fatalf("after resume: %+v", rec)
	}
	if s.Paused() != nil {
		t.Fatal("Paused on a running session")
	}
	s.SetStopped("stopped by request")
	if err := s.SetPaused("idle"); err == nil {
		t.Fatal("paused a stopped session")
	}
	wantStatus(t, s, Stopped, "stopped by request")
}

// TestStopKeepsFailed: a stop of a failed session leaves it failed, with
// its reason; a paused one stops, its pause ended.
func TestStopKeepsFailed(t *testing.T) {
	s, sb := running(t)
	if got := s.SetFailed("could not stop the sandbox"); got != sb {
		t.Fatalf("SetFailed gave %v", got)
	}
	s.SetStopped("stopped by request")
	wantStatus(t, s, Failed, "could not stop the sandbox")

	p, _ := running(t)
	if err := p.SetPaused("paused by request"); err != nil {
		t.Fatal(err)
	}
	p.SetStopped("stopped by request")
	wantStatus(t, p, Stopped, "stopped by request")
	if p.Sandbox() != nil || !p.Snapshot().PausedAt.IsZero() {
		t.Fatal("a stopped session kept its sandbox or its pause")
	}
}

// TestExited: only the session's own sandbox fails it; after a stop (its
// sandbox taken) the watcher's news is old.
func TestExited(t *testing.T) {
	s, sb := running(t)
	if s.SetExited(&box{"other"}, "signal 9") {
		t.Fatal("another sandbox's exit failed the session")
	}
	if !s.Lost(sb) {
		t.Fatal("its own sandbox is not the session's to bring back")
	}
	if !s.SetExited(sb, "signal 9") {
		t.Fatal("its sandbox's exit did not fail the session")
	}
	wantStatus(t, s, Failed, "signal 9")
	if !s.Lost(sb) {
		t.Fatal("a session its watcher failed is not the execution's to bring back")
	}
	if err := s.SetRunning(&box{"new"}); err != nil {
		t.Fatal(err)
	}
	if s.Lost(sb) {
		t.Fatal("a replaced sandbox is still the session's")
	}
	if taken := s.TakeSandbox(); taken == nil || s.SetExited(taken, "signal 9") {
		t.Fatal("a taken sandbox's exit failed the session")
	}
	wantStatus(t, s, Running, "")
}

// TestSetSandbox: a restored session keeps running or paused.
func TestSetSandbox(t *testing.T) {
	for _, st := range []Status{Running, Paused} {
		s := Load[*box](store.Record{ID: "s", Status: string(st), Reason: "kept"})
		if err := s.SetSandbox(&box{"s"}); err != nil {
			t.Fatal(err)
		}
		if got, _ := s.Status(); got != st || s.Sandbox() == nil {
			t.Fatalf("restored %s: now %s", st, got)
		}
	}
	s := Load[*box](store.Record{ID: "s", Status: string(Stopped)})
	if err := s.SetRunning(&box{"s"}); err != nil {
		t.Fatal(err)
	}
}

// TestNoteOOMKills tells each new kill once.
func TestNoteOOMKills(t *testing.T) {
	s, _ := running(t)
	if seen := s.NoteOOMKills(2); seen != 0 {
		t.Fatalf("first look: %d", seen)
	}
	if seen := s.NoteOOMKills(2); seen != 2 {
		t.Fatalf("second look: %d", seen)
	}
}
