package node

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/containerd/errdefs"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/daemon/config"
	sess "github.com/sandboxd/sandboxd/daemon/session"
	"github.com/sandboxd/sandboxd/internal/version"
	"github.com/sandboxd/sandboxd/store"
)

// testMachineID is a made-up /etc/machine-id; testNodeID is what it and
// the unit tests' instance id ("test") give (computed apart, with
// Python's hmac).
const (
	testMachineID = "0123456789abcdef0123456789abcdef"
	testNodeID    = "91e62c8b5eb7418dba7e46b70dd5928e"
)

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// fakeSource is a daemon as the node reads it: what each call answers is
// the test's, whatever the caller (the daemon filters by caller).
type fakeSource struct {
	mu       sync.Mutex
	sessions []store.Record
	pools    map[string]api.NodePool
	runtimes []string
	// db, cgroups, pools and space are the health checks' answers.
	db, cgroups, poolErr error
	poolShort            bool
	free                 int64
	short                bool
	spaceErr             error
	dbCalls              int
}

func (f *fakeSource) Sessions(context.Context) []store.Record       { return f.sessions }
func (f *fakeSource) Pools(context.Context) map[string]api.NodePool { return f.pools }
func (f *fakeSource) Runtimes() []string                            { return f.runtimes }
func (f *fakeSource) Volumes(context.Context) api.NodeVolumes {
	return api.NodeVolumes{Count: 1, SizeMB: 64}
}
func (f *fakeSource) CgroupsWritable() error             { return f.cgroups }
func (f *fakeSource) PoolsHealth() (error, bool)         { return f.poolErr, f.poolShort }
func (f *fakeSource) DataDirSpace() (int64, bool, error) { return f.free, f.short, f.spaceErr }

func (f *fakeSource) RequireRoot(ctx context.Context, what string) error {
	if ctx.Value(rootKey{}) == nil {
		return errdefs.ErrPermissionDenied.WithMessage("only root may " + what)
	}
	return nil
}

func (f *fakeSource) DatabaseWritable() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.dbCalls++
	return f.db
}

// rootKey marks a context of root's for the fake's RequireRoot.
type rootKey struct{}

var root = context.WithValue(context.Background(), rootKey{}, true)

// newTestNode is a node over src on a host of 2 GiB and 6 CPUs named
// node-a, with the test machine id.
func newTestNode(t *testing.T, cfg config.Config, src Source) *Node {
	t.Helper()
	dir := t.TempDir()
	if cfg.DataDir == "" {
		cfg.DataDir = t.TempDir()
	}
	h := &Host{MachineID: filepath.Join(dir, "machine-id"), Meminfo: filepath.Join(dir, "meminfo"), CPUs: 6,
		Hostname: func() (string, error) { return "node-a", nil }}
	writeFile(t, h.Meminfo, "MemTotal:        2097152 kB\n")
	writeFile(t, h.MachineID, testMachineID+"\n")
	n, err := New(cfg, "test", h, src, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestNodeCounts: capacity is the host's; sessions count by status, and
// running and paused ones are allocated; empty maps and lists are never
// null.
func TestNodeCounts(t *testing.T) {
	rec := func(st sess.Status, mem int64, cpus float64) store.Record {
		r := store.Record{Status: string(st)}
		r.Limits.MemoryMB, r.Limits.CPUs = mem, cpus
		return r
	}
	src := &fakeSource{
		sessions: []store.Record{rec(sess.Running, 256, 0.1), rec(sess.Paused, 64, 0.2), rec(sess.Stopped, 64, 1), rec(sess.Failed, 64, 1)},
		pools:    map[string]api.NodePool{"python": {Ready: 1, Target: 2}, "data": {}},
		runtimes: []string{api.RuntimeRunc},
	}
	n := newTestNode(t, config.Config{MaxSessions: 10, Node: config.Node{Labels: map[string]string{"zone": "a"}}}, src)
	got, err := n.Node(root)
	if err != nil {
		t.Fatal(err)
	}
	want := api.Node{NodeID: testNodeID, Hostname: "node-a", Version: version.Version, State: api.NodeReady,
		Labels: map[string]string{"zone": "a"}, Capacity: api.NodeResources{MemoryMB: 2048, CPUs: 6, Sessions: 10},
		Allocated:        api.NodeResources{MemoryMB: 320, CPUs: 0.3, Sessions: 2},
		SessionsByStatus: api.NodeSessions{Running: 1, Paused: 1, Stopped: 1, Failed: 1},
		Pools:            src.pools, Templates: []string{"data", "python"}, Runtimes: []string{api.RuntimeRunc},
		Volumes: api.NodeVolumes{Count: 1, SizeMB: 64}}
	if !reflect.DeepEqual(*got, want) {
		t.Errorf("got  %+v\nwant %+v", *got, want)
	}
	empty, err := newTestNode(t, config.Config{}, &fakeSource{runtimes: []string{}}).Node(root)
	if err != nil {
		t.Fatal(err)
	}
	if empty.Labels == nil || empty.Pools == nil || empty.Templates == nil {
		t.Errorf("null in an empty node: %+v", empty)
	}
}

// TestHealthStatus: each failed check is a reason; want of disk space
// alone degrades, anything else makes it unhealthy; the database is
// asked at most once per healthTTL.
func TestHealthStatus(t *testing.T) {
	const mb = 1 << 20
	for _, c := range []struct {
		name   string
		src    *fakeSource
		status string
		reason string
	}{
		{"ok", &fakeSource{free: 2048 * mb}, api.HealthOK, ""},
		{"data dir short", &fakeSource{free: 100 * mb, short: true}, api.HealthDegraded, "data_dir: 100 MiB free, below the floor of 1024 MiB"},
		{"pools short of space", &fakeSource{free: 2048 * mb, poolErr: errors.New("no space"), poolShort: true}, api.HealthDegraded, "pools: no space"},
		{"pools broken", &fakeSource{free: 2048 * mb, poolErr: errors.New("no more pids")}, api.HealthUnhealthy, "pools: no more pids"},
		{"cgroups", &fakeSource{free: 2048 * mb, cgroups: errors.New("read-only")}, api.HealthUnhealthy, "cgroups: read-only"},
		{"database", &fakeSource{free: 2048 * mb, db: errors.New("disk I/O")}, api.HealthUnhealthy, "database: disk I/O"},
		{"statfs fails", &fakeSource{spaceErr: errors.New("EIO")}, api.HealthUnhealthy, "data_dir: cannot read its free space: EIO"},
	} {
		t.Run(c.name, func(t *testing.T) {
			n := newTestNode(t, config.Config{DataDirMinFreeMB: 1024}, c.src)
			h, err := n.Health(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if h.Status != c.status || (c.reason == "") != (len(h.Reasons) == 0) ||
				(c.reason != "" && !strings.HasPrefix(strings.Join(h.Reasons, "|"), c.reason)) || len(h.Checks) != 4 {
				t.Fatalf("health %+v, want %s %q", h, c.status, c.reason)
			}
			if _, err := n.Health(context.Background()); err != nil || c.src.dbCalls != 1 {
				t.Fatalf("database asked %d times in a row", c.src.dbCalls)
			}
		})
	}
}

// TestDrainState: only root drains; draining refuses new sessions with a
// Retry-After; the state outlives a new node on the same data dir.
func TestDrainState(t *testing.T) {
	cfg := config.Config{DataDir: t.TempDir()}
	n := newTestNode(t, cfg, &fakeSource{})
	if _, err := n.Drain(context.Background(), true); !errdefs.IsPermissionDenied(err) {
		t.Fatalf("a user's drain: %v", err)
	}
	if err := n.CheckDraining(); err != nil {
		t.Fatalf("not draining: %v", err)
	}
	if a, err := n.Drain(root, true); err != nil || a.State != api.NodeDraining {
		t.Fatalf("drain: %+v %v", a, err)
	}
	err := n.CheckDraining()
	if after, ok := api.RetryAfter(err); !errdefs.IsUnavailable(err) || !ok || after != DrainRetryAfter {
		t.Fatalf("draining: %v (retry after %v)", err, after)
	}
	again := newTestNode(t, cfg, &fakeSource{})
	if again.CheckDraining() == nil {
		t.Fatal("the drain did not outlive a restart")
	}
	if a, err := again.Drain(root, false); err != nil || a.State != api.NodeReady || again.CheckDraining() != nil {
		t.Fatalf("drain off: %+v %v", a, err)
	}
}
