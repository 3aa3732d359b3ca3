package pool

import (
	"context"
	"log/slog"
	"time"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/daemon/config"
	"github.com/sandboxd/sandboxd/isolation"
	"github.com/sandboxd/sandboxd/store"
)

// What the templates and their pools need of the daemon, declared here
// (as the daemon's own Runtime is) so that they hold no *Daemon: the
// daemon implements these in one adapter (daemon/poolhost.go), and a
// test fakes them.

// Sandboxes starts and ends the sandboxes of pools and trials, and gives
// them their network.
type Sandboxes interface {
	// Start starts a sandbox of t that no session record holds yet: warm
	// for a pool (it waits until its interpreter is up, preload done),
	// else a trial of the template. A sandbox that failed to start is
	// gone when Start returns.
	Start(ctx context.Context, t *Template, warm bool) (Sandbox, error)
	// Destroy removes a sandbox: its disk, ids, runtime state and link.
	Destroy(sb Sandbox) error
	// LinkAhead gives a pooled sandbox its network link, closed to
	// everything, so that a claim with a network pays only for its
	// policy; nil when the host gives this sandbox no link ahead.
	LinkAhead(ctx context.Context, sb Sandbox) error
	// Hand makes a claimed sandbox the session of rec: rec takes the
	// sandbox's id, id block and network slot, the sandbox takes rec,
	// and the session's network policy.
	Hand(ctx context.Context, sb Sandbox, rec *store.Record) error
	// Creating reports whether creates are under way, which refills
	// yield to.
	Creating() bool
	// DiskFreed counts the session disks freed so far: a pool waiting
	// for disk space tries again once it moves.
	DiskFreed() uint64
	// Closed reports whether the daemon is shutting down.
	Closed() bool
}

// Sandbox is a sandbox a pool (or a trial) holds: a session the daemon
// started, with no record yet.
type Sandbox interface {
	ID() string
	// Exited is closed when the sandbox's first process ends; Exit says
	// how it ended.
	Exited() <-chan struct{}
	Exit() string
	// Alive reports whether its first process runs (without asking it).
	Alive() bool
	// Check asks it whether it answers, and its disk whether it takes
	// writes.
	Check(ctx context.Context) error
	// Writable reports whether its disk takes writes.
	Writable() error
	// SetLimits gives it other limits than its template's.
	SetLimits(l store.Limits) error
}

// Host is what the templates need of the daemon beside sandboxes: its
// rules for a template's definition, its images and its sessions.
type Host interface {
	// Limits are the configured defaults with what o sets.
	Limits(o *api.LimitDefaults) api.Limits
	// CheckDef checks what the daemon's own rules say of a definition:
	// its runtime, environment, limits and packages.
	CheckDef(def *api.Template) error
	// OpenImage prepares a root filesystem folder for sandboxes;
	// RemoveImage removes what it prepared.
	OpenImage(folder, rootfs string) (*isolation.Image, error)
	RemoveImage(folder string) error
	// Users counts the sessions of the template ref.
	Users(ref string) int
	// Packages installs template t's packages in sb, a sandbox of it,
	// into the folder build of its /workspace, from the index its
	// definition names (through a network that reaches the index alone),
	// and stops sb; it says where sb's workspace is on the host, and the
	// index. See buildPackages.
	Packages(ctx context.Context, sb Sandbox, t *Template, build string) (workspace, index string, err error)
}

// Metrics counts what the pools do.
type Metrics interface {
	// Refilled counts a refill of the pool of template label, begun at
	// started; Died a pooled sandbox that died or stopped answering.
	Refilled(label string, started time.Time)
	Died(label string)
	// Forget drops the series of a template removed.
	Forget(ref string)
}

// Caller is who asks for a template operation, with the daemon's rules
// for it (daemon/authz.go): the rules stay the daemon's.
type Caller interface {
	Known() bool
	IsRoot() bool
	UID() uint32
	// MayUse: the caller may see and manage what owner owns;
	// MayUseTemplate: the caller may see and use a template of owner.
	MayUse(owner uint32) bool
	MayUseTemplate(owner uint32) bool
	// HasPoolShare: the caller's pools are bounded by a share;
	// InPoolShare: a template of owner counts against it.
	HasPoolShare() bool
	InPoolShare(owner uint32) bool
	RequireRoot(what string) error
	RequireKnown() error
}

// Store keeps the templates' definitions (package store's Store).
type Store interface {
	Templates() ([]*store.Template, error)
	PutTemplate(t *store.Template) error
	DeleteTemplate(owner uint32, name string) error
}

// Clock is the time the pools' demand goes by (a test's moves on).
type Clock interface{ Now() time.Time }

// Options are what New takes.
type Options struct {
	Config *config.Config
	Store  Store
	Log    *slog.Logger
	Clock  Clock
	// Context is the daemon's own, which the pools' work runs under.
	Context   context.Context
	Sandboxes Sandboxes
	Host      Host
	Metrics   Metrics
	// Caller is the caller of a request's context.
	Caller func(ctx context.Context) Caller
	// Imports holds the root filesystems imported, a folder each;
	// Packages the templates' packages, a folder each (see folder).
	Imports, Packages string
	// RetryMin and RetryMax bound a failing pool's wait (0: the
	// package's RetryMin and RetryMax).
	RetryMin, RetryMax time.Duration
}
