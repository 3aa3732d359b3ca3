package daemon

import (
	"context"
	"io"
	"log/slog"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/daemon/config"
	"github.com/sandboxd/sandboxd/daemon/metrics"
	"github.com/sandboxd/sandboxd/daemon/pool"
	"github.com/sandboxd/sandboxd/internal/testutil"
	"github.com/sandboxd/sandboxd/isolation"
)

// waitValue waits until a series reaches want (the reaper and watchers
// act on their own time).
func waitValue(t *testing.T, g prometheus.Gatherer, want float64, name string, labels ...string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		v, _ := testutil.Scrape(t, g, name, labels...)
		if v == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s%v is %v, want %v", name, labels, v, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestSessionEndReasons: every way a session ends is counted once, in
// its class; a delete counts only for a session still running.
func TestSessionEndReasons(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *config.Config) { c.MaxSessionLifetimeS = 4; c.ShutdownStopsSessions = true })
	d := e.start()
	reg := d.Metrics().Registry()
	for _, r := range []string{"stopped", "idle", "lifetime", "deadline", "shutdown", "deleted", "oom", "lost", "failed"} {
		if v := testutil.Value(t, reg, "sandboxd_session_end_reasons_total", "reason", r); v != 0 {
			t.Fatalf("%s starts at %v", r, v)
		}
	}
	idle, err := d.CreateSession(root, &api.CreateSessionRequest{IdleTimeoutS: ptr(1)})
	if err != nil {
		t.Fatal(err)
	}
	old := mustCreate(t, d, root) // reaches max_session_lifetime_s
	stopped := mustCreate(t, d, root)
	if _, err := d.StopSession(root, stopped.ID); err != nil {
		t.Fatal(err)
	}
	if err := d.DeleteSession(root, stopped.ID); err != nil { // ended already
		t.Fatal(err)
	}
	deleted := mustCreate(t, d, root)
	if err := d.DeleteSession(root, deleted.ID); err != nil {
		t.Fatal(err)
	}
	oom, crashed := mustCreate(t, d, root), mustCreate(t, d, root)
	e.h.box(oom.ID).die(isolation.ExitInfo{Known: true, Signal: syscall.SIGKILL, OOM: true})
	e.h.box(crashed.ID).die(isolation.ExitInfo{Known: true, Signal: syscall.SIGSEGV})
	// The watchers act on their own time; the reaper on the daemon's
	// clock, which the test moves on: past the idle timeout (1 s), then
	// past the lifetime (4 s).
	for _, r := range []string{"oom", "failed"} {
		waitValue(t, reg, 1, "sandboxd_session_end_reasons_total", "reason", r)
	}
	e.clock.advance(2 * time.Second)
	waitValue(t, reg, 1, "sandboxd_session_end_reasons_total", "reason", "idle")
	e.clock.advance(3 * time.Second)
	waitValue(t, reg, 1, "sandboxd_session_end_reasons_total", "reason", "lifetime")
	if _, why := status(t, d, idle.ID); !strings.HasPrefix(why, metrics.ReasonIdlePrefix) {
		t.Fatalf("idle stop's reason %q", why)
	}
	if _, why := status(t, d, old.ID); !strings.HasPrefix(why, metrics.ReasonLifetimePrefix) {
		t.Fatalf("lifetime stop's reason %q", why)
	}
	mustCreate(t, d, root) // stopped by the shutdown
	if err := d.Close(root); err != nil {
		t.Fatal(err)
	}
	for r, want := range map[string]float64{
		"stopped": 1, "deleted": 1, "oom": 1, "failed": 1, "idle": 1, "lifetime": 1, "shutdown": 1, "lost": 0,
	} {
		if got := testutil.Value(t, reg, "sandboxd_session_end_reasons_total", "reason", r); got != want {
			t.Errorf("%s: %v, want %v", r, got, want)
		}
	}
}

// TestPoolHitsAndMisses: a create its template's pool serves is a hit,
// one it cannot (the request does not fit a pooled sandbox) a miss; each
// refill is timed; a template without a pool counts neither.
func TestPoolHitsAndMisses(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *config.Config) { c.PoolSize = 1 })
	d := e.start()
	reg := d.Metrics().Registry()
	waitPool(t, d, 1)
	if n := testutil.Value(t, reg, "sandboxd_pool_refill_duration_seconds", "template", pool.DefaultTemplate); n < 1 {
		t.Fatalf("%v refills timed", n)
	}
	for _, state := range []string{"idle", "target", "min"} {
		if v := testutil.Value(t, reg, "sandboxd_pool_sandboxes", "template", pool.DefaultTemplate, "state", state); v != 1 {
			t.Errorf("pool sandboxes %s: %v, want 1", state, v)
		}
	}
	mustCreate(t, d, root)
	if _, err := d.CreateSession(root, &api.CreateSessionRequest{DiskMB: ptr(int64(2048))}); err != nil {
		t.Fatal(err)
	}
	// Each create's steps are timed, by where its sandbox came from, and
	// each start's (the pool's two and the cold one).
	for _, c := range [][]string{{"pool", "admit"}, {"pool", "claim"}, {"pool", "record"}, {"cold", "admit"}, {"cold", "start"}, {"cold", "record"}} {
		if n := testutil.Value(t, reg, "sandboxd_session_create_phase_seconds", "source", c[0], "phase", c[1]); n != 1 {
			t.Errorf("create step %v timed %v times, want 1", c, n)
		}
	}
	for _, phase := range []string{"disk", "prepare", "container", "agent", "network"} {
		if n := testutil.Value(t, reg, "sandboxd_sandbox_start_phase_seconds", "runtime", "runc", "phase", phase); n < 2 {
			t.Errorf("start step %s timed %v times, want 2 or more", phase, n)
		}
	}
	if h, m := testutil.Value(t, reg, "sandboxd_pool_hits_total", "template", pool.DefaultTemplate), testutil.Value(t, reg, "sandboxd_pool_misses_total", "template", pool.DefaultTemplate); h != 1 || m != 1 {
		t.Fatalf("hits %v, misses %v; want 1 and 1", h, m)
	}
	if c := testutil.Value(t, reg, "sandboxd_pool_claims_total"); c != 1 {
		t.Fatalf("sandboxd_pool_claims_total %v", c)
	}
	if _, err := d.Templates().AddTemplate(root, &api.Template{Name: "nopool"}); err != nil {
		t.Fatal(err)
	}
	s, err := d.CreateSession(root, &api.CreateSessionRequest{Template: "nopool"})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := testutil.Scrape(t, reg, "sandboxd_pool_misses_total", "template", "nopool"); ok {
		t.Fatal("a template without a pool counted a miss")
	}
	// A deleted template's series go with it.
	if _, err := d.Templates().AddTemplate(root, &api.Template{Name: "pooled", PoolSize: ptr(1)}); err != nil {
		t.Fatal(err)
	}
	waitValue(t, reg, 1, "sandboxd_pool_refill_duration_seconds", "template", "pooled")
	if err := d.DeleteSession(root, s.ID); err != nil {
		t.Fatal(err)
	}
	if err := d.Templates().DeleteTemplate(root, "pooled"); err != nil {
		t.Fatal(err)
	}
	if _, ok := testutil.Scrape(t, reg, "sandboxd_pool_refill_duration_seconds", "template", "pooled"); ok {
		t.Fatal("a deleted template's series stayed")
	}
}

// TestScrapedSessionsAndIDBlocks: sessions by runtime and status, and the
// id blocks in use, are read from the daemon at each scrape; the whole
// registry scrapes over HTTP.
func TestScrapedSessionsAndIDBlocks(t *testing.T) {
	e := newEnv(t, nil)
	d := e.start()
	reg := d.Metrics().Registry()
	a := mustCreate(t, d, root)
	mustCreate(t, d, root)
	if _, err := d.CreateSession(root, &api.CreateSessionRequest{Runtime: api.RuntimeRunsc}); err != nil {
		t.Fatal(err)
	}
	if _, err := d.StopSession(root, a.ID); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		runtime, status string
		want            float64
	}{
		{api.RuntimeRunc, api.StatusRunning, 1},
		{api.RuntimeRunc, api.StatusStopped, 1},
		{api.RuntimeRunc, api.StatusPaused, 0},
		{api.RuntimeRunsc, api.StatusRunning, 1},
		{api.RuntimeRunsc, api.StatusFailed, 0},
	} {
		if got := testutil.Value(t, reg, "sandboxd_sessions_by_runtime", "runtime", tc.runtime, "status", tc.status); got != tc.want {
			t.Errorf("%s %s: %v, want %v", tc.runtime, tc.status, got, tc.want)
		}
	}
	if got, want := testutil.Value(t, reg, "sandboxd_userns_id_blocks_in_use"), float64(e.ids.InUse()); got != want || got < 2 {
		t.Errorf("id blocks in use: %v, want %v", got, want)
	}
	if got := testutil.Value(t, reg, "sandboxd_userns_id_blocks"); got != float64(e.ids.Range().Blocks) {
		t.Errorf("id blocks: %v", got)
	}
	// The old series stays as it was.
	if got := testutil.Value(t, reg, "sandboxd_sessions", "status", api.StatusRunning); got != 2 {
		t.Errorf("sandboxd_sessions running: %v", got)
	}
	w := httptest.NewRecorder()
	d.Metrics().Handler().ServeHTTP(w, httptest.NewRequest("GET", "/metrics", nil))
	for _, want := range []string{"sandboxd_sessions_by_runtime{", "sandboxd_userns_id_blocks_in_use ", "sandboxd_session_end_reasons_total{reason=\"idle\"} 0"} {
		if w.Code != 200 || !strings.Contains(w.Body.String(), want) {
			t.Fatalf("scrape: %d, lacks %q", w.Code, want)
		}
	}
}

// TestNoIDBlocksWithoutUserNS: without user namespaces there is no id
// block series at all, rather than a misleading 0 of 0.
func TestNoIDBlocksWithoutUserNS(t *testing.T) {
	e := newEnv(t, func(c *config.Config) { c.UserNS.Enabled = false })
	st, err := openStore(e.cfg)
	if err != nil {
		t.Fatal(err)
	}
	d, err := newDaemon(context.Background(), e.cfg, slog.New(slog.NewTextHandler(io.Discard, nil)), metrics.New(), deps{store: st, rt: fakeRuntime{e.h}, inst: instance{id: "test"}, probe: e.disk,
		net: netDeps{net: e.net}})
	if err != nil {
		st.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close(context.Background()) })
	if _, ok := testutil.Scrape(t, d.Metrics().Registry(), "sandboxd_userns_id_blocks_in_use"); ok {
		t.Fatal("id blocks counted without an allocator")
	}
}
