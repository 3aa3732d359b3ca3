package daemon

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/containerd/errdefs"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/daemon/config"
	"github.com/sandboxd/sandboxd/daemon/metrics"
	"github.com/sandboxd/sandboxd/internal/testutil"
)

// createWithDeadline creates a session of uid 1000 that ends n seconds
// from now.
func createWithDeadline(t *testing.T, d *Daemon, n int) *api.Session {
	t.Helper()
	s, err := d.CreateSession(as(1000), &api.CreateSessionRequest{DeadlineS: ptr(n)})
	if err != nil {
		t.Fatal(err)
	}
	if s.Deadline == nil {
		t.Fatalf("created with deadline_s %d, it shows none: %+v", n, s)
	}
	return s
}

// setDeadline PATCHes a session's deadline as its owner.
func setDeadline(t *testing.T, d *Daemon, id string, n int) *api.Session {
	t.Helper()
	s, err := d.UpdateSession(as(1000), id, &api.UpdateSessionRequest{DeadlineS: ptr(n)})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// wantStatus checks a session's status, and its reason's start.
func wantStatus(t *testing.T, d *Daemon, id, want, reason string) {
	t.Helper()
	st, why := status(t, d, id)
	if st != want || !strings.HasPrefix(why, reason) {
		t.Fatalf("session %s is %s (%q), want %s (%q…)", id, st, why, want, reason)
	}
}

// TestDeadline: a session ends at its deadline, running or paused, as the
// reaper stops it (event, reason, metric); a deadline moved later or
// removed spares it, one moved earlier ends it sooner; a stopped session
// ignores its deadline, and starting it again clears a passed one.
func TestDeadline(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	d := e.start()
	ev := watchEvents(t, d)
	reg := d.Metrics().Registry()

	plain := createWithDeadline(t, d, 3)
	if got, want := *plain.Deadline, e.clock.Now().Add(3*time.Second); got.Sub(want).Abs() > 2*time.Second || got.Location() != time.UTC {
		t.Fatalf("deadline %v, want about %v in UTC", got, want)
	}
	extended := createWithDeadline(t, d, 3)
	if got := setDeadline(t, d, extended.ID, 600); !got.Deadline.After(*plain.Deadline) {
		t.Fatalf("extended deadline %v", got.Deadline)
	}
	removed := createWithDeadline(t, d, 3)
	if got := setDeadline(t, d, removed.ID, 0); got.Deadline != nil {
		t.Fatalf("deadline_s 0 left %v", got.Deadline)
	}
	if got, _ := d.GetSession(as(1000), removed.ID); got.Deadline != nil {
		t.Fatalf("GET after removing it: %v", got.Deadline)
	}
	paused := createWithDeadline(t, d, 3)
	if _, err := d.PauseSession(as(1000), paused.ID); err != nil {
		t.Fatal(err)
	}
	stopped := createWithDeadline(t, d, 3)
	if _, err := d.StopSession(as(1000), stopped.ID); err != nil {
		t.Fatal(err)
	}
	shortened := mustCreate(t, d, as(1000))
	if shortened.Deadline != nil {
		t.Fatalf("a session created without deadline_s has one: %v", shortened.Deadline)
	}
	shortened, _ = d.GetSession(as(1000), shortened.ID)
	setDeadline(t, d, shortened.ID, 3600)
	setDeadline(t, d, shortened.ID, 2)

	e.clock.advance(4 * time.Second)
	got := ev.waitForAll(t, map[string]string{plain.ID: api.ActionStopped, paused.ID: api.ActionStopped, shortened.ID: api.ActionStopped})
	for id, g := range got {
		if !strings.HasPrefix(g.Reason, metrics.ReasonDeadlinePrefix) || !strings.Contains(g.Reason, "deadline_s") {
			t.Errorf("session %s: stop's reason %q", id, g.Reason)
		}
		wantStatus(t, d, id, api.StatusStopped, metrics.ReasonDeadlinePrefix)
	}
	// The reaper looked at every session at the time that stopped these.
	wantStatus(t, d, extended.ID, api.StatusRunning, "")
	wantStatus(t, d, removed.ID, api.StatusRunning, "")
	wantStatus(t, d, stopped.ID, api.StatusStopped, "stopped by request")
	waitValue(t, reg, 3, "sandboxd_session_end_reasons_total", "reason", "deadline")
	if v := testutil.Value(t, reg, "sandboxd_session_end_reasons_total", "reason", "stopped"); v != 1 {
		t.Errorf("stopped by request: %v, want 1", v)
	}

	// Started again, a session whose deadline passed is not stopped at
	// once: the deadline is gone. A stopped session's deadline can be set
	// and keeps for its next start.
	for _, id := range []string{plain.ID, stopped.ID} {
		s, err := d.StartSession(as(1000), id)
		if err != nil || s.Status != api.StatusRunning || s.Deadline != nil {
			t.Fatalf("start after the deadline: %+v %v", s, err)
		}
	}
	if _, err := d.StopSession(as(1000), paused.ID); err != nil {
		t.Fatal(err)
	}
	setDeadline(t, d, paused.ID, 60)
	if s, err := d.StartSession(as(1000), paused.ID); err != nil || s.Deadline == nil {
		t.Fatalf("start before the deadline keeps it: %+v %v", s, err)
	}
	e.clock.advance(2 * time.Second)
	witness := createWithDeadline(t, d, 1)
	e.clock.advance(2 * time.Second)
	ev.waitFor(t, witness.ID, api.ActionStopped)
	for _, id := range []string{plain.ID, stopped.ID, paused.ID, extended.ID, removed.ID} {
		wantStatus(t, d, id, api.StatusRunning, "")
	}
}

// TestDeadlineRefused: deadline_s out of range, or a PATCH with nothing
// to change, is the caller's mistake; another user's session is not
// found.
func TestDeadlineRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	d := e.start()
	for _, n := range []int{0, -1, maxDeadlineS + 1} {
		if _, err := d.CreateSession(as(1000), &api.CreateSessionRequest{DeadlineS: ptr(n)}); !errdefs.IsInvalidArgument(err) || !strings.Contains(err.Error(), "deadline_s") {
			t.Errorf("create with deadline_s %d: %v", n, err)
		}
	}
	if _, err := d.Run(as(1000), &api.RunRequest{CreateSessionRequest: api.CreateSessionRequest{DeadlineS: ptr(5)}, Language: api.LanguagePython, Code: "1"}, nil); !errdefs.IsInvalidArgument(err) {
		t.Errorf("run with deadline_s: %v", err)
	}
	s := mustCreate(t, d, as(1000))
	for _, req := range []api.UpdateSessionRequest{{}, {DeadlineS: ptr(-5)}, {DeadlineS: ptr(maxDeadlineS + 1)}} {
		if _, err := d.UpdateSession(as(1000), s.ID, &req); !errdefs.IsInvalidArgument(err) || !strings.Contains(err.Error(), "deadline_s") {
			t.Errorf("PATCH %+v: %v", req, err)
		}
	}
	if _, err := d.UpdateSession(as(2000), s.ID, &api.UpdateSessionRequest{DeadlineS: ptr(5)}); !errdefs.IsNotFound(err) {
		t.Errorf("another user's PATCH: %v", err)
	}
	if got, _ := d.GetSession(as(1000), s.ID); got.Deadline != nil {
		t.Errorf("a refused PATCH set %v", got.Deadline)
	}
}

// TestDeadlineSurvivesRestart: the deadline is in the session's record: a
// new daemon shows it and keeps to it.
func TestDeadlineSurvivesRestart(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	d := e.start()
	s := createWithDeadline(t, d, 30)
	if err := d.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	d2 := e.start()
	ev := watchEvents(t, d2)
	got, err := d2.GetSession(as(1000), s.ID)
	if err != nil || got.Status != api.StatusRunning || got.Deadline == nil || !got.Deadline.Equal(*s.Deadline) {
		t.Fatalf("after a restart: %+v %v; want deadline %v", got, err, s.Deadline)
	}
	e.clock.advance(31 * time.Second)
	if r := ev.waitFor(t, s.ID, api.ActionStopped).Reason; !strings.HasPrefix(r, metrics.ReasonDeadlinePrefix) {
		t.Fatalf("reason %q", r)
	}
}

// TestDeadlinePastLifetime: a deadline past max_session_lifetime_s is
// taken, but the lifetime ends the session first.
func TestDeadlinePastLifetime(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *config.Config) { c.MaxSessionLifetimeS = 4 })
	d := e.start()
	ev := watchEvents(t, d)
	s := createWithDeadline(t, d, 600)
	e.clock.advance(5 * time.Second)
	if r := ev.waitFor(t, s.ID, api.ActionStopped).Reason; !strings.HasPrefix(r, metrics.ReasonLifetimePrefix) {
		t.Fatalf("reason %q, want the lifetime's", r)
	}
}
