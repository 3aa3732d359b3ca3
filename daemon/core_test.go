package daemon

import (
	"context"
	"errors"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/containerd/errdefs"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/daemon/config"
	"github.com/sandboxd/sandboxd/daemon/pool"
	"github.com/sandboxd/sandboxd/internal/testutil"
	"github.com/sandboxd/sandboxd/isolation"
)

// TestLifecycle walks a session through every transition a client can
// ask for, checking the status, the refusals and the events.
func TestLifecycle(t *testing.T) {
	e := newEnv(t, nil)
	d := e.start()
	ev := watchEvents(t, d)
	s := mustCreate(t, d, root)
	ev.waitFor(t, s.ID, api.ActionCreated)
	steps := []struct {
		name   string
		op     func() error
		status string
		event  string
		errIs  error
	}{
		{"exec while running", func() error { mustExec(t, d, root, s.ID, "x = 1"); return nil }, api.StatusRunning, "", nil},
		{"stop", func() error { _, err := d.StopSession(root, s.ID); return err }, api.StatusStopped, api.ActionStopped, nil},
		{"stop again is no error", func() error { _, err := d.StopSession(root, s.ID); return err }, api.StatusStopped, "", nil},
		{"exec while stopped", func() error {
			_, err := d.Exec(root, s.ID, &api.ExecRequest{Language: "python", Code: "x"}, nil)
			return err
		}, api.StatusStopped, "", errdefs.ErrConflict},
		{"start", func() error { _, err := d.StartSession(root, s.ID); return err }, api.StatusRunning, api.ActionStarted, nil},
		{"start again changes nothing", func() error { _, err := d.StartSession(root, s.ID); return err }, api.StatusRunning, "", nil},
		{"restart", func() error { _, err := d.RestartSession(root, s.ID); return err }, api.StatusRunning, api.ActionRestarted, nil},
	}
	for _, st := range steps {
		err := st.op()
		if st.errIs != nil {
			if !errors.Is(err, st.errIs) {
				t.Fatalf("%s: err = %v, want %v", st.name, err, st.errIs)
			}
		} else if err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		if got, _ := status(t, d, s.ID); got != st.status {
			t.Fatalf("%s: status %s, want %s", st.name, got, st.status)
		}
		if st.event != "" {
			ev.waitFor(t, s.ID, st.event)
		}
	}
	// A restart is a fresh interpreter: x is gone.
	if r := mustExec(t, d, root, s.ID, "x"); r.Status != api.StatusError {
		t.Fatalf("x after restart: %+v", r)
	}
	if err := d.DeleteSession(root, s.ID); err != nil {
		t.Fatal(err)
	}
	ev.waitFor(t, s.ID, api.ActionDeleted)
	if _, err := d.GetSession(root, s.ID); !errdefs.IsNotFound(err) {
		t.Fatalf("after delete: %v", err)
	}
	if len(e.h.ids()) != 0 || e.ids.InUse() != 0 {
		t.Fatalf("left: sandboxes %v, id blocks %d", e.h.ids(), e.ids.InUse())
	}
}

// TestSandboxDeath: a sandbox that dies on its own fails its session at
// once, with how it ended as the reason; the next exec says to start it.
func TestSandboxDeath(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		how    isolation.ExitInfo
		reason string
		oom    bool
	}{
		{"killed", isolation.ExitInfo{Known: true, Signal: syscall.SIGKILL}, "sandbox exited: signal 9", false},
		{"exited", isolation.ExitInfo{Known: true, Status: 3}, "sandbox exited: status 3", false},
		{"out of memory", isolation.ExitInfo{Known: true, Signal: syscall.SIGKILL, OOM: true}, "out of memory", true},
		{"restored, unknown", isolation.ExitInfo{}, "sandbox exited", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, nil)
			d := e.start()
			ev := watchEvents(t, d)
			s := mustCreate(t, d, root)
			e.h.box(s.ID).die(tt.how)
			if tt.oom {
				ev.waitFor(t, s.ID, api.ActionOOM)
			}
			got := ev.waitFor(t, s.ID, api.ActionFailed)
			if got.Reason != tt.reason {
				t.Fatalf("reason %q, want %q", got.Reason, tt.reason)
			}
			if st, reason := status(t, d, s.ID); st != api.StatusFailed || reason != tt.reason {
				t.Fatalf("session %s (%s)", st, reason)
			}
			if _, err := d.Exec(root, s.ID, &api.ExecRequest{Language: "python", Code: "1"}, nil); !errdefs.IsConflict(err) || !strings.Contains(err.Error(), "start it first") {
				t.Fatalf("exec on failed session: %v", err)
			}
			if _, err := d.StartSession(root, s.ID); err != nil {
				t.Fatal(err)
			}
			mustExec(t, d, root, s.ID, "y = 2")
		})
	}
}

// TestExecRecovery: an execution whose sandbox died or stopped answering
// answers killed or timeout with state_reset, and the session runs again
// on a fresh sandbox, even when the client has gone (its context is
// cancelled: the repair must not depend on it).
func TestExecRecovery(t *testing.T) {
	tests := []struct{ code, status string }{{"crash", api.StatusKilled}, {"hang", api.StatusTimeout}}
	for _, tt := range tests {
		t.Run(tt.code, func(t *testing.T) {
			e := newEnv(t, nil)
			d := e.start()
			ev := watchEvents(t, d)
			s := mustCreate(t, d, root)
			mustExec(t, d, root, s.ID, "x = 5")
			ctx, cancel := context.WithCancel(root)
			cancel()
			r, err := d.Exec(ctx, s.ID, &api.ExecRequest{Language: "python", Code: tt.code}, nil)
			if err != nil || r.Status != tt.status || !r.StateReset {
				t.Fatalf("exec %s: %+v %v", tt.code, r, err)
			}
			ev.waitFor(t, s.ID, api.ActionRestarted)
			if st, _ := status(t, d, s.ID); st != api.StatusRunning {
				t.Fatalf("status %s after recovery", st)
			}
			if r := mustExec(t, d, root, s.ID, "x"); r.Status != api.StatusError {
				t.Fatalf("x survived a restart: %+v", r)
			}
			mustExec(t, d, root, s.ID, "x = 6")
		})
	}
}

// TestOOMEvent: an execution killed for memory is an oom event; the
// session keeps running.
func TestOOMEvent(t *testing.T) {
	e := newEnv(t, nil)
	d := e.start()
	ev := watchEvents(t, d)
	s := mustCreate(t, d, root)
	if r := mustExec(t, d, root, s.ID, "oom"); r.Status != api.StatusKilled {
		t.Fatalf("%+v", r)
	}
	ev.waitFor(t, s.ID, api.ActionOOM)
	if st, _ := status(t, d, s.ID); st != api.StatusRunning {
		t.Fatalf("status %s", st)
	}
}

// TestPoolDeaths: pooled sandboxes killed while they wait are noticed,
// counted and replaced, never claimed; nothing of them is left.
func TestPoolDeaths(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *config.Config) { c.PoolSize = 2; c.MaxSessions = 50 })
	d := e.start()
	waitPool(t, d, 2)
	for _, id := range e.h.ids() {
		e.h.box(id).die(isolation.ExitInfo{Known: true, Signal: syscall.SIGKILL})
	}
	var ids []string
	for i := 0; i < 20; i++ {
		s := mustCreate(t, d, as(1000))
		if r := mustExec(t, d, as(1000), s.ID, "v = 1"); r.Status != api.StatusOK {
			t.Fatalf("create %d: %+v", i, r)
		}
		ids = append(ids, s.ID)
	}
	waitPool(t, d, 2)
	if n, _ := testutil.Scrape(t, d.metrics.Registry(), "sandboxd_pool_sandbox_deaths_total", "template", pool.DefaultTemplate); n < 2 {
		t.Fatalf("pool deaths counted: %v, want 2", n)
	}
	// 20 sessions and 2 pooled sandboxes: no more sandboxes, id blocks or
	// session folders than that.
	if n := len(e.h.ids()); n != 22 {
		t.Fatalf("%d sandboxes run, want 22", n)
	}
	if n := e.ids.InUse(); n != 22 {
		t.Fatalf("%d id blocks in use, want 22", n)
	}
	for _, id := range ids {
		if err := d.DeleteSession(as(1000), id); err != nil {
			t.Fatal(err)
		}
	}
	if n := e.ids.InUse(); n != 2 {
		t.Fatalf("%d id blocks in use after deletes, want 2", n)
	}
}

// waitPool waits until the default template's pool holds n sandboxes.
func waitPool(t *testing.T, d *Daemon, n int) {
	t.Helper()
	testutil.WaitFor(t, 20*time.Second, func() bool {
		info, err := d.Info(root)
		if err != nil {
			t.Fatal(err)
		}
		return info.Pool.Templates[pool.DefaultTemplate].Idle == n
	}, "the pool never held %d sandboxes", n)
}

// TestReconcile: what a restarted daemon decides for each session and
// sandbox it finds.
func TestReconcile(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		restartLost bool
		// kill the sandbox while no daemon runs
		kill bool
		// its agent is one the new daemon cannot speak to
		oldAgent   bool
		wantStatus string
		wantEvent  string
	}{
		{name: "restored", wantStatus: api.StatusRunning, wantEvent: api.ActionRestored},
		{name: "lost", kill: true, wantStatus: api.StatusFailed, wantEvent: api.ActionLost},
		{name: "lost and restarted", kill: true, restartLost: true, wantStatus: api.StatusRunning, wantEvent: api.ActionStarted},
		{name: "agent too old", oldAgent: true, wantStatus: api.StatusRunning, wantEvent: api.ActionRestarted},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, func(c *config.Config) { c.RestartLostSessions = tt.restartLost })
			d := e.start()
			s := mustCreate(t, d, as(1000))
			mustExec(t, d, as(1000), s.ID, "x = 7")
			stopped := mustCreate(t, d, as(1000))
			if _, err := d.StopSession(as(1000), stopped.ID); err != nil {
				t.Fatal(err)
			}
			if err := d.Close(context.Background()); err != nil {
				t.Fatal(err)
			}
			if e.h.box(s.ID) == nil {
				t.Fatal("a daemon that stopped took its sandbox with it")
			}
			if tt.kill {
				e.h.box(s.ID).die(isolation.ExitInfo{Known: true, Signal: syscall.SIGKILL})
			}
			e.h.oldAgent[s.ID] = tt.oldAgent
			e.h.mu.Lock()
			e.h.leftovers["orphan"] = true
			e.h.mu.Unlock()
			d2 := e.start()
			got := d2.events
			found := false
			got.mu.Lock()
			for _, ent := range got.ring {
				if ent.ev.SessionID == s.ID && ent.ev.Action == tt.wantEvent {
					found = true
					if tt.wantEvent == api.ActionLost && !strings.Contains(ent.ev.Reason, "daemon restart") {
						t.Errorf("lost reason %q", ent.ev.Reason)
					}
				}
			}
			got.mu.Unlock()
			if !found {
				t.Fatalf("no %s event for the session", tt.wantEvent)
			}
			if st, _ := status(t, d2, s.ID); st != tt.wantStatus {
				t.Fatalf("status %s, want %s", st, tt.wantStatus)
			}
			if st, _ := status(t, d2, stopped.ID); st != api.StatusStopped {
				t.Fatalf("stopped session is %s", st)
			}
			if tt.name == "restored" {
				if r := mustExec(t, d2, as(1000), s.ID, "x"); r.Result == nil || *r.Result != "7" || r.StateReset {
					t.Fatalf("x after restore: %+v", r)
				}
			}
			if tt.oldAgent {
				e.h.oldAgent[s.ID] = false
				// The first execution says the interpreter was restarted;
				// the next does not.
				if r := mustExec(t, d2, as(1000), s.ID, "x"); !r.StateReset || r.Status != api.StatusError {
					t.Fatalf("first exec after the agent was replaced: %+v", r)
				}
				if r := mustExec(t, d2, as(1000), s.ID, "x = 1"); r.StateReset {
					t.Fatalf("second exec: %+v", r)
				}
			}
			if _, left := e.h.leftovers["orphan"]; left {
				t.Fatal("the orphan sandbox was not removed")
			}
		})
	}
}

// TestQuotas: creates past max_sessions and max_sessions_per_uid answer
// resource_exhausted, and stopped sessions do not count.
func TestQuotas(t *testing.T) {
	e := newEnv(t, func(c *config.Config) { c.MaxSessions = 3; c.MaxSessionsPerUID = 2 })
	d := e.start()
	a := mustCreate(t, d, as(1000))
	mustCreate(t, d, as(1000))
	if _, err := d.CreateSession(as(1000), &api.CreateSessionRequest{}); !errdefs.IsResourceExhausted(err) {
		t.Fatalf("third for uid 1000: %v", err)
	}
	mustCreate(t, d, as(2000))
	if _, err := d.CreateSession(as(3000), &api.CreateSessionRequest{}); !errdefs.IsResourceExhausted(err) {
		t.Fatalf("fourth on the host: %v", err)
	}
	if _, err := d.StopSession(as(1000), a.ID); err != nil {
		t.Fatal(err)
	}
	mustCreate(t, d, as(3000))
	if _, err := d.StartSession(as(1000), a.ID); !errdefs.IsResourceExhausted(err) {
		t.Fatalf("start past the host quota: %v", err)
	}
}

// TestAuthorization: nobody may do nothing; users see only their own
// sessions and events; root sees all.
func TestAuthorization(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	d := e.start()
	alice := mustCreate(t, d, as(1000))
	bob := mustCreate(t, d, as(2000))
	nobody := context.Background()
	if _, err := d.CreateSession(nobody, &api.CreateSessionRequest{}); !errdefs.IsPermissionDenied(err) {
		t.Fatalf("nobody creates: %v", err)
	}
	if l, _ := d.ListSessions(nobody, nil); len(l) != 0 {
		t.Fatalf("nobody lists %d sessions", len(l))
	}
	if _, err := d.GetSession(nobody, alice.ID); !errdefs.IsNotFound(err) {
		t.Fatalf("nobody gets: %v", err)
	}
	if _, err := d.GetSession(as(2000), alice.ID); !errdefs.IsNotFound(err) {
		t.Fatalf("bob gets alice's: %v", err)
	}
	if err := d.DeleteSession(as(2000), alice.ID); !errdefs.IsNotFound(err) {
		t.Fatalf("bob deletes alice's: %v", err)
	}
	if l, _ := d.ListSessions(as(1000), nil); len(l) != 1 || l[0].ID != alice.ID {
		t.Fatalf("alice lists %+v", l)
	}
	if l, _ := d.ListSessions(root, nil); len(l) != 2 {
		t.Fatalf("root lists %d", len(l))
	}
	if _, err := d.Templates().ImportRootfs(as(1000), "x", strings.NewReader("")); !errdefs.IsPermissionDenied(err) {
		t.Fatalf("alice imports: %v", err)
	}
	// Templates are owned: alice's is hers alone.
	if _, err := d.Templates().AddTemplate(as(1000), &api.Template{Name: "alices"}); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Templates().Template(as(2000), "alices"); !errdefs.IsNotFound(err) {
		t.Fatalf("bob sees alice's template: %v", err)
	}
	if _, err := d.CreateSession(as(2000), &api.CreateSessionRequest{Template: "alices"}); !errdefs.IsNotFound(err) {
		t.Fatalf("bob uses alice's template: %v", err)
	}
	if _, err := d.CreateSession(as(1000), &api.CreateSessionRequest{Template: "alices"}); err != nil {
		t.Fatalf("alice uses her template: %v", err)
	}
	// Events: bob's stream shows none of alice's.
	var seen []string
	ctx, cancel := context.WithTimeout(as(2000), 200*time.Millisecond)
	defer cancel()
	_ = d.Events(ctx, api.EventFilter{Since: time.Unix(1, 0)}, func(ev *api.SessionEvent) error {
		seen = append(seen, ev.SessionID)
		return nil
	})
	for _, id := range seen {
		if id != bob.ID {
			t.Fatalf("bob saw an event of session %s", id)
		}
	}
	if len(seen) == 0 {
		t.Fatal("bob saw none of his own events")
	}
}

// TestEventsFilter: since, until, session and type select events.
func TestEventsFilter(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	d := e.start()
	a := mustCreate(t, d, root)
	mid := time.Now()
	b := mustCreate(t, d, root)
	collect := func(f api.EventFilter) []string {
		var out []string
		ctx, cancel := context.WithTimeout(root, 100*time.Millisecond)
		defer cancel()
		_ = d.Events(ctx, f, func(ev *api.SessionEvent) error {
			out = append(out, ev.SessionID+" "+ev.Action)
			return nil
		})
		return out
	}
	past := time.Unix(1, 0)
	tests := []struct {
		name string
		f    api.EventFilter
		want []string
	}{
		{"all since", api.EventFilter{Since: past}, []string{a.ID + " created", b.ID + " created"}},
		{"since mid", api.EventFilter{Since: mid}, []string{b.ID + " created"}},
		{"until mid", api.EventFilter{Since: past, Until: mid}, []string{a.ID + " created"}},
		{"session", api.EventFilter{Since: past, Sessions: []string{b.ID}}, []string{b.ID + " created"}},
		{"type", api.EventFilter{Since: past, Types: []string{"mcp"}}, nil},
		{"no since: only new", api.EventFilter{}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := collect(tt.f)
			if strings.Join(got, ",") != strings.Join(tt.want, ",") {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
		})
	}
}

// TestIdleTimeout: the reaper stops an idle session with the reason, and
// the event says it.
func TestIdleTimeout(t *testing.T) {
	e := newEnv(t, nil)
	d := e.start()
	ev := watchEvents(t, d)
	s, err := d.CreateSession(root, &api.CreateSessionRequest{IdleTimeoutS: ptr(1)})
	if err != nil {
		t.Fatal(err)
	}
	e.clock.advance(2 * time.Second) // past the idle timeout, for the reaper
	got := ev.waitFor(t, s.ID, api.ActionStopped)
	if !strings.Contains(got.Reason, "idle timeout") {
		t.Fatalf("reason %q", got.Reason)
	}
}

func ptr[T any](v T) *T { return &v }

// TestStoreFailureReachesClient: a session state write that fails is an
// error the client sees.
func TestStoreFailureReachesClient(t *testing.T) {
	e := newEnv(t, nil)
	d := e.start()
	s := mustCreate(t, d, root)
	d.store.Close() // every write fails from now on
	if _, err := d.StopSession(root, s.ID); err == nil {
		t.Fatal("a stop whose record could not be written answered no error")
	}
	if _, err := d.CreateSession(root, &api.CreateSessionRequest{}); err == nil {
		t.Fatal("a create whose record could not be written answered no error")
	}
}

// TestOperationsWait: an operation or execution asked for while another
// operation is under way waits for it, then acts on what it left.
func TestOperationsWait(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	d := e.start()
	s := mustCreate(t, d, root)
	e.h.mu.Lock()
	e.h.stopDelay = 300 * time.Millisecond
	e.h.mu.Unlock()
	stopped := make(chan error, 1)
	go func() { _, err := d.StopSession(root, s.ID); stopped <- err }()
	waitOp(t, d, s.ID, opStop)
	// An execution during the stop waits, then finds it stopped.
	if _, err := d.Exec(root, s.ID, &api.ExecRequest{Language: "python", Code: "1"}, nil); !errdefs.IsConflict(err) || !strings.Contains(err.Error(), "start it first") {
		t.Fatalf("exec during a stop: %v", err)
	}
	if err := <-stopped; err != nil {
		t.Fatal(err)
	}
	if _, err := d.StartSession(root, s.ID); err != nil {
		t.Fatal(err)
	}
	// A start during a restart (its stop takes a while) waits, and finds
	// it running.
	restarted := make(chan error, 1)
	go func() { _, err := d.RestartSession(root, s.ID); restarted <- err }()
	waitOp(t, d, s.ID, opStart)
	if got, err := d.StartSession(root, s.ID); err != nil || got.Status != api.StatusRunning {
		t.Fatalf("start during a start: %+v %v", got, err)
	}
	if err := <-restarted; err != nil {
		t.Fatal(err)
	}
	// A delete during a stop waits; what waited on it finds no session.
	if _, err := d.RestartSession(root, s.ID); err != nil {
		t.Fatal(err)
	}
	go func() { _, _ = d.StopSession(root, s.ID) }()
	waitOp(t, d, s.ID, opStop)
	if err := d.DeleteSession(root, s.ID); err != nil {
		t.Fatal(err)
	}
	// A caller that gives up waiting gets a conflict that says why.
	s2 := mustCreate(t, d, root)
	go func() { _, _ = d.StopSession(root, s2.ID) }()
	waitOp(t, d, s2.ID, opStop)
	ctx, cancel := context.WithTimeout(root, 20*time.Millisecond)
	defer cancel()
	if _, err := d.StartSession(ctx, s2.ID); !errdefs.IsConflict(err) || !strings.Contains(err.Error(), "stopping") {
		t.Fatalf("a start that gave up: %v", err)
	}
}

// waitOp waits until session id has operation op under way.
func waitOp(t *testing.T, d *Daemon, id, op string) {
	t.Helper()
	s, ok := d.sessions.get(id)
	if !ok {
		t.Fatalf("no session %s", id)
	}
	testutil.WaitFor(t, 10*time.Second, func() bool { return s.Op() == op },
		"session %s never had %s under way", id, op)
}

// TestListSessions: a list is oldest first, filtered by every label
// asked for, and the same list each time.
func TestListSessions(t *testing.T) {
	t.Parallel()
	d := newEnv(t, nil).start()
	var ids []string
	for i, labels := range []map[string]string{{"team": "a"}, {"team": "b"}, {"team": "a", "tier": "x"}, nil} {
		s, err := d.CreateSession(root, &api.CreateSessionRequest{Labels: labels})
		if err != nil {
			t.Fatalf("create %d: %v", i, err)
		}
		ids = append(ids, s.ID)
	}
	for _, tc := range []struct {
		labels map[string]string
		want   []string
	}{
		{nil, ids},
		{map[string]string{"team": "a"}, []string{ids[0], ids[2]}},
		{map[string]string{"team": "a", "tier": "x"}, []string{ids[2]}},
		{map[string]string{"team": "c"}, nil},
		{map[string]string{"tier": ""}, nil},
	} {
		for range 3 {
			l, err := d.ListSessions(root, tc.labels)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, s := range l {
				got = append(got, s.ID)
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("labels %v: listed %v, want %v", tc.labels, got, tc.want)
			}
		}
	}
}
