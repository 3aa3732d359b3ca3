package pool

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/containerd/errdefs"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/daemon/config"
	"github.com/sandboxd/sandboxd/internal/testutil"
	"github.com/sandboxd/sandboxd/isolation"
	"github.com/sandboxd/sandboxd/store"
)

// fakeSandboxes starts sandboxes that are records in a map: what the
// pools do with them is what these tests watch.
type fakeSandboxes struct {
	mu         sync.Mutex
	next       int
	live       map[string]*fakeSandbox
	startDelay time.Duration
	failStart  error
	creating   bool
	freed      uint64
	closed     bool
}

func newFakeSandboxes() *fakeSandboxes { return &fakeSandboxes{live: map[string]*fakeSandbox{}} }

func (f *fakeSandboxes) Start(ctx context.Context, t *Template, warm bool) (Sandbox, error) {
	f.mu.Lock()
	delay, fail := f.startDelay, f.failStart
	f.mu.Unlock()
	if delay > 0 {
		select {
		case <-time.After(delay):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if fail != nil {
		return nil, fail
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.next++
	sb := &fakeSandbox{id: fmt.Sprintf("sb%d", f.next), exited: make(chan struct{})}
	f.live[sb.id] = sb
	return sb, nil
}

func (f *fakeSandboxes) Destroy(sb Sandbox) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.live, sb.ID())
	return nil
}

func (f *fakeSandboxes) LinkAhead(ctx context.Context, sb Sandbox) error { return nil }

func (f *fakeSandboxes) Hand(ctx context.Context, sb Sandbox, rec *store.Record) error {
	rec.ID = sb.ID()
	return nil
}

func (f *fakeSandboxes) Creating() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.creating
}

func (f *fakeSandboxes) DiskFreed() uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.freed
}

func (f *fakeSandboxes) Closed() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.closed
}

// running counts the sandboxes started and not destroyed.
func (f *fakeSandboxes) running() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.live)
}

func (f *fakeSandboxes) get(id string) *fakeSandbox {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.live[id]
}

func (f *fakeSandboxes) ids() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for id := range f.live {
		out = append(out, id)
	}
	return out
}

// fakeSandbox is one sandbox of fakeSandboxes: a test makes it die
// (exit), lose its process unseen (gone) or stop answering (unhealthy).
type fakeSandbox struct {
	id     string
	exited chan struct{}

	mu        sync.Mutex
	gone      bool
	unhealthy bool
	limits    store.Limits
}

func (s *fakeSandbox) ID() string              { return s.id }
func (s *fakeSandbox) Exited() <-chan struct{} { return s.exited }
func (s *fakeSandbox) Exit() string            { return "killed" }
func (s *fakeSandbox) exit()                   { close(s.exited) }
func (s *fakeSandbox) Writable() error         { return nil }

func (s *fakeSandbox) Alive() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return !s.gone
}

func (s *fakeSandbox) Check(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.unhealthy {
		return errors.New("no answer")
	}
	return nil
}

func (s *fakeSandbox) SetLimits(l store.Limits) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.limits = l
	return nil
}

// fakeHost gives every template the same limits, and no images.
type fakeHost struct{ users *int }

func (fakeHost) Limits(o *api.LimitDefaults) api.Limits {
	l := api.Limits{MemoryMB: 512, CPUs: 1, Pids: 256, DiskMB: 1024, TimeoutS: 60}
	if o != nil && o.DiskMB != nil {
		l.DiskMB = *o.DiskMB
	}
	return l
}
func (fakeHost) CheckDef(def *api.Template) error                          { return nil }
func (fakeHost) OpenImage(folder, rootfs string) (*isolation.Image, error) { return nil, nil }
func (fakeHost) RemoveImage(folder string) error                           { return nil }
func (h fakeHost) Users(ref string) int {
	if h.users == nil {
		return 0
	}
	return *h.users
}
func (fakeHost) Packages(ctx context.Context, sb Sandbox, t *Template, build string) (string, string, error) {
	return "", "", errors.New("no packages here")
}

// fakeMetrics counts refills and deaths.
type fakeMetrics struct {
	mu              sync.Mutex
	refills, deaths int
}

func (m *fakeMetrics) Refilled(label string, started time.Time) {
	m.mu.Lock()
	m.refills++
	m.mu.Unlock()
}

func (m *fakeMetrics) Died(label string) {
	m.mu.Lock()
	m.deaths++
	m.mu.Unlock()
}

func (m *fakeMetrics) Forget(ref string) {}

func (m *fakeMetrics) died() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.deaths
}

// fakeStore holds no template but the built-in one.
type fakeStore struct{}

func (fakeStore) Templates() ([]*store.Template, error)          { return nil, nil }
func (fakeStore) PutTemplate(t *store.Template) error            { return nil }
func (fakeStore) DeleteTemplate(owner uint32, name string) error { return nil }

// fakeClock is the time moved on by what a test added.
type fakeClock struct {
	mu     sync.Mutex
	offset time.Duration
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.offset)
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	c.offset += d
	c.mu.Unlock()
}

// env is a Templates over fakes, its pools started.
type env struct {
	ts      *Templates
	sbs     *fakeSandboxes
	metrics *fakeMetrics
	clock   *fakeClock
	// users is what Host.Users answers for every template.
	users int
}

func newTestEnv(t *testing.T, mod func(*config.Config)) *env {
	t.Helper()
	dir := t.TempDir()
	cfg := config.Default()
	cfg.DataDir, cfg.RunDir = filepath.Join(dir, "data"), filepath.Join(dir, "run")
	cfg.PoolSize, cfg.PoolMaxSize = 0, 0
	if mod != nil {
		mod(&cfg)
	}
	e := &env{sbs: newFakeSandboxes(), metrics: &fakeMetrics{}, clock: &fakeClock{}}
	host := fakeHost{users: &e.users}
	ts, err := New(Options{
		Config: &cfg, Store: fakeStore{}, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Clock: e.clock,
		Context: context.Background(), Sandboxes: e.sbs, Host: host, Metrics: e.metrics,
		Imports: filepath.Join(cfg.DataDir, "templates"), Packages: filepath.Join(cfg.DataDir, "packages"),
		RetryMin: 20 * time.Millisecond, RetryMax: 200 * time.Millisecond,
		Caller: callerOf,
	})
	if err != nil {
		t.Fatal(err)
	}
	e.ts = ts
	ts.StartPools()
	t.Cleanup(ts.Close)
	return e
}

// pool is the built-in template's pool.
func (e *env) pool() *Pool {
	e.ts.mu.Lock()
	defer e.ts.mu.Unlock()
	return e.ts.byName[DefaultTemplate].pool
}

// claim claims a sandbox of the built-in template's pool, as a create of
// its limits would, and wakes the pools as the create's end does; nil if
// none came.
func (e *env) claim(t *testing.T) Sandbox {
	t.Helper()
	tmpl, err := e.ts.ForStart(DefaultTemplate)
	if err != nil {
		t.Fatal(err)
	}
	rec := &store.Record{Template: tmpl.Ref(), Limits: store.Limits(tmpl.Limits()), Network: api.NetworkNone, Runtime: tmpl.Runtime()}
	defer e.ts.Wake()
	return e.pool().Claim(context.Background(), rec, func(string) {})
}

// waitReady waits until the built-in template's pool holds n sandboxes.
func (e *env) waitReady(t *testing.T, n int) {
	t.Helper()
	testutil.WaitFor(t, 10*time.Second, func() bool { return e.pool().ready() == n }, "the pool never held %d sandboxes", n)
}

// fakeCaller is a caller with the daemon's rules (daemon/authz.go) in
// short: root sees and manages all; a user, what it owns and root's
// templates; a user's pools count against its share.
type fakeCaller struct {
	uid  uint32
	root bool
}

type callerKey struct{}

// as is a context of the user uid (0: root).
func as(uid uint32) context.Context {
	return context.WithValue(context.Background(), callerKey{}, fakeCaller{uid: uid, root: uid == 0})
}

func callerOf(ctx context.Context) Caller {
	c, _ := ctx.Value(callerKey{}).(fakeCaller)
	return c
}

func (c fakeCaller) Known() bool                      { return true }
func (c fakeCaller) IsRoot() bool                     { return c.root }
func (c fakeCaller) UID() uint32                      { return c.uid }
func (c fakeCaller) MayUse(owner uint32) bool         { return c.root || c.uid == owner }
func (c fakeCaller) MayUseTemplate(owner uint32) bool { return owner == 0 || c.MayUse(owner) }
func (c fakeCaller) HasPoolShare() bool               { return !c.root }
func (c fakeCaller) InPoolShare(owner uint32) bool    { return !c.root && c.uid == owner }
func (c fakeCaller) RequireKnown() error              { return nil }
func (c fakeCaller) RequireRoot(what string) error {
	if c.root {
		return nil
	}
	return errdefs.ErrPermissionDenied.WithMessage("only root may " + what)
}
