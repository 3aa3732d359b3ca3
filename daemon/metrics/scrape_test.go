package metrics

import (
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/internal/testutil"
)

// fakeSource is a daemon as the scrape reads it.
type fakeSource struct {
	sessions map[string]bool
	byStatus map[string]int
	byRT     map[RuntimeStatus]int
	pools    map[string]api.PoolFill
	inUse    int
	blocks   int // 0: no user namespaces
	denied   map[string]uint64
}

func (f *fakeSource) SessionsByStatus() map[string]int         { return f.byStatus }
func (f *fakeSource) SessionsByRuntime() map[RuntimeStatus]int { return f.byRT }
func (f *fakeSource) PoolDepths() map[string]api.PoolFill      { return f.pools }
func (f *fakeSource) IDBlocks() (int, int, bool)               { return f.inUse, f.blocks, f.blocks > 0 }
func (f *fakeSource) DeniedPackets() map[string]uint64         { return f.denied }
func (f *fakeSource) SessionExists(id string) bool             { return f.sessions[id] }

// TestScrapeReadsTheSource: the series computed at scrape time show
// nothing before Watch, then what the source says at each scrape; the id
// blocks are there only with user namespaces; the whole registry scrapes
// over HTTP.
func TestScrapeReadsTheSource(t *testing.T) {
	m := New()
	for _, name := range []string{"sandboxd_sessions", "sandboxd_sessions_by_runtime", "sandboxd_network_denied_packets_total", "sandboxd_pool_sandboxes"} {
		if n := testutil.Series(t, m.Registry(), name); n != 0 {
			t.Errorf("%s has %d series before Watch", name, n)
		}
	}
	src := &fakeSource{
		byStatus: map[string]int{api.StatusRunning: 2, api.StatusStopped: 0},
		byRT:     map[RuntimeStatus]int{{api.RuntimeRunc, api.StatusRunning}: 1, {api.RuntimeRunsc, api.StatusRunning}: 1, {api.RuntimeRunc, api.StatusPaused}: 0},
		pools:    map[string]api.PoolFill{"default": {Idle: 1, Target: 3, Size: 2}},
		inUse:    4, blocks: 16,
		denied: map[string]uint64{"a": 5},
	}
	m.Watch(src)
	reg := m.Registry()
	for _, tc := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"sandboxd_sessions", []string{"status", api.StatusRunning}, 2},
		{"sandboxd_sessions", []string{"status", api.StatusStopped}, 0},
		{"sandboxd_sessions_by_runtime", []string{"runtime", api.RuntimeRunsc, "status", api.StatusRunning}, 1},
		{"sandboxd_sessions_by_runtime", []string{"runtime", api.RuntimeRunc, "status", api.StatusPaused}, 0},
		{"sandboxd_pool_sandboxes", []string{"template", "default", "state", "idle"}, 1},
		{"sandboxd_pool_sandboxes", []string{"template", "default", "state", "target"}, 3},
		{"sandboxd_pool_sandboxes", []string{"template", "default", "state", "min"}, 2},
		{"sandboxd_userns_id_blocks_in_use", nil, 4},
		{"sandboxd_userns_id_blocks", nil, 16},
		{"sandboxd_network_denied_packets_total", nil, 5},
	} {
		if got := testutil.Value(t, reg, tc.name, tc.labels...); got != tc.want {
			t.Errorf("%s%v: %v, want %v", tc.name, tc.labels, got, tc.want)
		}
	}
	// Read anew at each scrape: a session gone keeps its packets counted.
	src.inUse, src.denied = 5, map[string]uint64{"b": 1}
	if got := testutil.Value(t, reg, "sandboxd_userns_id_blocks_in_use"); got != 5 {
		t.Errorf("id blocks in use after a change: %v", got)
	}
	if got := testutil.Value(t, reg, "sandboxd_network_denied_packets_total"); got != 6 {
		t.Errorf("denied packets after a session went: %v", got)
	}
	w := httptest.NewRecorder()
	m.Handler().ServeHTTP(w, httptest.NewRequest("GET", "/metrics", nil))
	for _, want := range []string{"sandboxd_sessions_by_runtime{", "sandboxd_userns_id_blocks_in_use 5", `sandboxd_session_end_reasons_total{reason="idle"} 0`, "go_goroutines "} {
		if w.Code != 200 || !strings.Contains(w.Body.String(), want) {
			t.Fatalf("scrape: %d, lacks %q", w.Code, want)
		}
	}

	// Without user namespaces there is no id block series at all.
	m = New()
	m.Watch(&fakeSource{})
	if _, ok := testutil.Scrape(t, m.Registry(), "sandboxd_userns_id_blocks_in_use"); ok {
		t.Fatal("id blocks counted without user namespaces")
	}
}

// TestCounters: what the daemon counts as it works lands in its series.
func TestCounters(t *testing.T) {
	m := New()
	reg := m.Registry()
	m.ExecEnded("python", api.StatusOK, 0)
	m.ExecLost("python", api.StatusKilled)
	m.Created(true, 0)
	m.Created(false, 0)
	m.CreateFailed()
	m.PoolClaim("default", true)
	m.PoolClaim("default", false)
	m.PoolDied("default")
	m.MCPCall("", "error")
	m.SeccompDenied("ptrace")
	m.HistoryWriteFailed()
	m.CountPanic()
	for _, tc := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"sandboxd_executions_total", []string{"language", "python", "status", api.StatusOK}, 1},
		{"sandboxd_executions_total", []string{"language", "python", "status", api.StatusKilled}, 1},
		{"sandboxd_execution_duration_seconds", []string{"language", "python"}, 1},
		{"sandboxd_session_creates_total", []string{"result", "ok"}, 2},
		{"sandboxd_session_creates_total", []string{"result", "error"}, 1},
		{"sandboxd_session_create_duration_seconds", nil, 2},
		{"sandboxd_pool_claims_total", nil, 1},
		{"sandboxd_pool_hits_total", []string{"template", "default"}, 1},
		{"sandboxd_pool_misses_total", []string{"template", "default"}, 1},
		{"sandboxd_pool_sandbox_deaths_total", []string{"template", "default"}, 1},
		{"sandboxd_mcp_calls_total", []string{"server", "", "outcome", "error"}, 1},
		{"sandboxd_seccomp_denied_total", []string{"syscall", "ptrace"}, 1},
		{"sandboxd_history_write_errors_total", nil, 1},
		{"sandboxd_handler_panics_total", nil, 1},
	} {
		if got := testutil.Value(t, reg, tc.name, tc.labels...); got != tc.want {
			t.Errorf("%s%v: %v, want %v", tc.name, tc.labels, got, tc.want)
		}
	}
	// A deleted template's series go with it.
	m.ForgetTemplate("default")
	for _, name := range []string{"sandboxd_pool_hits_total", "sandboxd_pool_misses_total", "sandboxd_pool_sandbox_deaths_total"} {
		if _, ok := testutil.Scrape(t, reg, name, "template", "default"); ok {
			t.Errorf("%s stayed after the template's delete", name)
		}
	}
}
