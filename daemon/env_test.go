package daemon

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/daemon/config"
	"github.com/sandboxd/sandboxd/daemon/metrics"
	"github.com/sandboxd/sandboxd/daemon/node"
	"github.com/sandboxd/sandboxd/internal/identity"
	"github.com/sandboxd/sandboxd/internal/logging"
	"github.com/sandboxd/sandboxd/isolation/idmap"
	"github.com/sandboxd/sandboxd/isolation/volume"
)

// The daemon's core against a fake runtime: no root, no sandboxes, the
// whole tier in seconds. Each test has its own data dir and fake host.

type testEnv struct {
	t   *testing.T
	h   *fakeHost
	cfg config.Config
	ids *idmap.Allocator
	// disk is the host's disk as the daemon sees it: plenty free unless a
	// test says otherwise.
	disk *fakeDisk
	// net is the host's sandbox networks.
	net *fakeNetwork
	// host is what GET /v1/node reads (nil: this host).
	host *node.Host
	// clock is what the reaper and the pools time by: a test moves it on
	// (clock.advance) rather than wait for an idle timeout or a window.
	clock *fakeClock
}

func newEnv(t *testing.T, mod func(*config.Config)) *testEnv {
	t.Helper()
	dir := t.TempDir()
	cfg := config.Default()
	cfg.DataDir, cfg.RunDir = filepath.Join(dir, "data"), filepath.Join(dir, "run")
	// The host's lease folders are not the unit tier's: a closing daemon
	// gives its range back there.
	cfg.UserNS.LeaseDir, cfg.Network.LeaseDir = filepath.Join(dir, "ids"), filepath.Join(dir, "subnets")
	cfg.DiskQuota = volume.Plain
	cfg.PoolSize, cfg.PoolMaxSize = 0, 0
	cfg.Seccomp.LogDenied = false
	if mod != nil {
		mod(&cfg)
	}
	ids, err := idmap.New(idmap.Range{Base: 1 << 30, Blocks: 64})
	if err != nil {
		t.Fatal(err)
	}
	return &testEnv{t: t, h: newFakeHost(t.TempDir()), cfg: cfg, ids: ids, disk: newFakeDisk(1 << 40), net: newFakeNetwork(), clock: &fakeClock{}}
}

// start starts a daemon over the env's data dir and fake host; it is
// closed at the end of the test unless the test closes it first.
func (e *testEnv) start() *Daemon {
	e.t.Helper()
	st, err := openStore(e.cfg)
	if err != nil {
		e.t.Fatal(err)
	}
	// Each daemon has its own allocator, as a restarted one does.
	ids, _ := idmap.New(e.ids.Range())
	e.ids = ids
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	d, err := newDaemon(context.Background(), e.cfg, log, metrics.New(), deps{store: st, rt: fakeRuntime{e.h}, ids: ids, inst: instance{id: "test"}, probe: e.disk,
		net: netDeps{net: e.net}, host: e.host, clock: e.clock})
	if err != nil {
		st.Close()
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { _ = d.Close(context.Background()) })
	return d
}

func as(uid uint32) context.Context {
	ctx := logging.With(context.Background(), slog.New(slog.NewTextHandler(io.Discard, nil)))
	return identity.With(ctx, identity.Peer(uid, uid, 1))
}

var root = as(0)

// eventLog collects the events root sees, from now on.
type eventLog struct{ ch chan api.SessionEvent }

func watchEvents(t *testing.T, d *Daemon) *eventLog {
	t.Helper()
	l := &eventLog{ch: make(chan api.SessionEvent, 1024)}
	ctx, cancel := context.WithCancel(root)
	started := make(chan struct{})
	go func() {
		_ = d.Events(ctx, api.EventFilter{Since: time.Unix(1, 0)}, func(e *api.SessionEvent) error {
			l.ch <- *e
			return nil
		})
	}()
	close(started)
	t.Cleanup(cancel)
	return l
}

// waitFor waits for an event of session id with action, and returns it.
func (l *eventLog) waitFor(t *testing.T, id, action string) api.SessionEvent {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		select {
		case e := <-l.ch:
			if e.SessionID == id && e.Action == action {
				return e
			}
		case <-deadline:
			t.Fatalf("no %q event for session %s", action, id)
		}
	}
}

// waitForAll waits for an event of each session with its action (by
// session id), in any order, and returns them by session.
func (l *eventLog) waitForAll(t *testing.T, want map[string]string) map[string]api.SessionEvent {
	t.Helper()
	got := map[string]api.SessionEvent{}
	deadline := time.After(20 * time.Second)
	for len(got) < len(want) {
		select {
		case e := <-l.ch:
			if a, ok := want[e.SessionID]; ok && e.Action == a {
				got[e.SessionID] = e
			}
		case <-deadline:
			t.Fatalf("events %v: saw only %v", want, got)
		}
	}
	return got
}

func mustCreate(t *testing.T, d *Daemon, ctx context.Context) *api.Session {
	t.Helper()
	s, err := d.CreateSession(ctx, &api.CreateSessionRequest{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func mustExec(t *testing.T, d *Daemon, ctx context.Context, id, code string) *api.Execution {
	t.Helper()
	e, err := d.Exec(ctx, id, &api.ExecRequest{Language: api.LanguagePython, Code: code}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func status(t *testing.T, d *Daemon, id string) (string, string) {
	t.Helper()
	s, err := d.GetSession(root, id)
	if err != nil {
		t.Fatal(err)
	}
	return s.Status, s.Reason
}
