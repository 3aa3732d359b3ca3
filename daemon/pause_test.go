package daemon

import (
	"testing"
	"time"

	"github.com/containerd/errdefs"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/daemon/config"
	"github.com/sandboxd/sandboxd/internal/testutil"
	"github.com/sandboxd/sandboxd/store"
)

// TestPause: pause freezes the session's sandbox and keeps its state; an
// execution, stats or resume thaws it; a daemon restart keeps it paused;
// stop and start act on it as on a running one. Each change is an event.
func TestPause(t *testing.T) {
	e := newEnv(t, nil)
	d := e.start()
	ev := watchEvents(t, d)
	s := mustCreate(t, d, as(1000))
	mustExec(t, d, as(1000), s.ID, "x = 5")
	pause := func() {
		t.Helper()
		got, err := d.PauseSession(as(1000), s.ID)
		if err != nil || got.Status != api.StatusPaused || got.Reason != "paused by request" || !e.h.box(s.ID).isFrozen() {
			t.Fatalf("pause: %+v %v", got, err)
		}
		// Its interpreter finished starting before the freeze.
		if !e.h.box(s.ID).wasReadyFrozen() {
			t.Fatal("the pause froze the sandbox without waiting for its interpreter")
		}
		ev.waitFor(t, s.ID, api.ActionPaused)
	}
	pause()
	if got, err := d.PauseSession(as(1000), s.ID); err != nil || got.Status != api.StatusPaused {
		t.Fatalf("pause of a paused session: %+v %v", got, err)
	}
	if info, _ := d.Info(root); info.Sessions.Paused != 1 || info.Sessions.Running != 0 {
		t.Errorf("info: %+v", info.Sessions)
	}
	if n, _ := d.node.Node(root); n.SessionsByStatus.Paused != 1 || n.Allocated.Sessions != 1 {
		t.Errorf("node: %+v %+v", n.SessionsByStatus, n.Allocated)
	}
	if _, err := d.PauseSession(as(2000), s.ID); !errdefs.IsNotFound(err) {
		t.Errorf("another user's pause: %v", err)
	}

	// An execution resumes it, state intact.
	if r := mustExec(t, d, as(1000), s.ID, "x"); r.Result == nil || *r.Result != "5" || r.StateReset {
		t.Fatalf("x after a pause: %+v", r)
	}
	ev.waitFor(t, s.ID, api.ActionResumed)
	if got, _ := d.GetSession(as(1000), s.ID); got.Status != api.StatusRunning || got.Reason != "" {
		t.Errorf("after the execution: %+v", got)
	}
	// So do stats, and resume; resuming a running session changes nothing.
	pause()
	if st, err := d.Stats(as(1000), s.ID); err != nil || st.Status != api.StatusRunning || e.h.box(s.ID).isFrozen() {
		t.Errorf("stats of a paused session: %+v %v", st, err)
	}
	pause()
	for range 2 {
		if got, err := d.ResumeSession(as(1000), s.ID); err != nil || got.Status != api.StatusRunning || e.h.box(s.ID).isFrozen() {
			t.Fatalf("resume: %+v %v", got, err)
		}
	}

	// A daemon restart keeps it paused, sandbox and all.
	pause()
	if err := d.Close(root); err != nil {
		t.Fatal(err)
	}
	d = e.start()
	if got, _ := d.GetSession(as(1000), s.ID); got.Status != api.StatusPaused || got.Reason != "paused by request" || !e.h.box(s.ID).isFrozen() {
		t.Fatalf("after a restart: %+v (frozen %v)", got, e.h.box(s.ID).isFrozen())
	}
	if r := mustExec(t, d, as(1000), s.ID, "x"); r.Result == nil || *r.Result != "5" {
		t.Fatalf("x after a restart while paused: %+v", r)
	}

	// Stop and start act on a paused session; a stopped one does not
	// resume.
	ev = watchEvents(t, d)
	pause()
	if got, err := d.StopSession(as(1000), s.ID); err != nil || got.Status != api.StatusStopped {
		t.Fatalf("stop of a paused session: %+v %v", got, err)
	}
	if _, err := d.ResumeSession(as(1000), s.ID); !errdefs.IsConflict(err) {
		t.Errorf("resume of a stopped session: %v", err)
	}
	if _, err := d.PauseSession(as(1000), s.ID); !errdefs.IsConflict(err) {
		t.Errorf("pause of a stopped session: %v", err)
	}
	if got, err := d.StartSession(as(1000), s.ID); err != nil || got.Status != api.StatusRunning {
		t.Fatalf("start: %+v %v", got, err)
	}
	// Start resumes a paused session.
	pause()
	if got, err := d.StartSession(as(1000), s.ID); err != nil || got.Status != api.StatusRunning || e.h.box(s.ID).isFrozen() {
		t.Fatalf("start of a paused session: %+v %v", got, err)
	}
}

// TestPauseDuringExecution: a session running an execution is not
// paused (frozen, the execution would time out); once it ends, it is.
func TestPauseDuringExecution(t *testing.T) {
	e := newEnv(t, nil)
	d := e.start()
	s := mustCreate(t, d, as(1000))
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = d.Exec(as(1000), s.ID, &api.ExecRequest{Language: api.LanguagePython, Code: "sleep", TimeoutS: ptr(30.0)}, nil)
	}()
	box := e.h.box(s.ID)
	testutil.WaitFor(t, 10*time.Second, box.sleeping, "the execution did not start")
	if _, err := d.PauseSession(as(1000), s.ID); !errdefs.IsConflict(err) {
		t.Fatalf("pause during an execution: %v", err)
	}
	if _, err := d.Interrupt(as(1000), s.ID); err != nil {
		t.Fatal(err)
	}
	<-done
	if got, err := d.PauseSession(as(1000), s.ID); err != nil || got.Status != api.StatusPaused {
		t.Fatalf("pause after it: %+v %v", got, err)
	}
}

// TestIdleActionPause: with idle_action pause, the idle timeout pauses the
// session instead of stopping it; a create may ask for either.
func TestIdleActionPause(t *testing.T) {
	e := newEnv(t, func(c *config.Config) { c.IdleAction = config.IdlePause })
	d := e.start()
	ev := watchEvents(t, d)
	one := 1
	paused, err := d.CreateSession(as(1000), &api.CreateSessionRequest{IdleTimeoutS: &one})
	if err != nil || paused.IdleAction != config.IdlePause {
		t.Fatalf("create: %+v %v", paused, err)
	}
	stopped, err := d.CreateSession(as(1000), &api.CreateSessionRequest{IdleTimeoutS: &one, IdleAction: config.IdleStop})
	if err != nil || stopped.IdleAction != config.IdleStop {
		t.Fatalf("create: %+v %v", stopped, err)
	}
	// Both idle out on the same tick, in either order: the test moves the
	// reaper's clock past their timeout.
	e.clock.advance(2 * time.Second)
	got := ev.waitForAll(t, map[string]string{paused.ID: api.ActionPaused, stopped.ID: api.ActionStopped})
	if got[paused.ID].Reason == "" {
		t.Errorf("paused event: %+v", got[paused.ID])
	}
	if got, _ := d.GetSession(as(1000), paused.ID); got.Status != api.StatusPaused || !e.h.box(paused.ID).isFrozen() {
		t.Errorf("idle session: %+v", got)
	}
	if _, err := d.CreateSession(as(1000), &api.CreateSessionRequest{IdleAction: "sleep"}); !errdefs.IsInvalidArgument(err) {
		t.Errorf("idle_action sleep: %v", err)
	}
}

// TestLifetimeSkipsPauses: the time a session spent paused does not count
// towards max_session_lifetime_s.
func TestLifetimeSkipsPauses(t *testing.T) {
	c := &config.Config{MaxSessionLifetimeS: 60}
	at := time.Now()
	for _, tc := range []struct {
		name     string
		created  time.Duration // ago
		pausedS  float64
		pausedAt time.Duration // ago; 0: not paused
		expired  bool
	}{
		{"young", 10 * time.Second, 0, 0, false},
		{"old", 90 * time.Second, 0, 0, true},
		{"old, paused long before", 90 * time.Second, 40, 0, false},
		{"old, paused now", 90 * time.Second, 0, 40 * time.Second, false},
		{"old, not paused enough", 120 * time.Second, 20, 20 * time.Second, true},
	} {
		rec := &store.Record{CreatedAt: at.Add(-tc.created), PausedS: tc.pausedS}
		if tc.pausedAt > 0 {
			rec.PausedAt = at.Add(-tc.pausedAt)
		}
		s := loadSession(rec)
		if got := expired(c, s, at); got != tc.expired {
			t.Errorf("%s: expired %v", tc.name, got)
		}
	}
}
