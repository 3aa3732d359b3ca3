// Package daemon is sandboxd's core: it owns the sessions, each a sandbox
// from package isolation with its record in package store, and implements
// the operations the API serves, one operation per file.
package daemon

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/containerd/errdefs"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/cgroups"
	"github.com/sandboxd/sandboxd/daemon/identity"
	"github.com/sandboxd/sandboxd/internal/hostcheck"
	"github.com/sandboxd/sandboxd/isolation"
	"github.com/sandboxd/sandboxd/isolation/idmap"
	"github.com/sandboxd/sandboxd/isolation/volume"
	"github.com/sandboxd/sandboxd/seccomp"
	"github.com/sandboxd/sandboxd/store"
)

// Daemon holds every session of this host.
type Daemon struct {
	cfg   Config
	log   *slog.Logger
	store *store.Store
	rt    *isolation.Runtime
	tree  *cgroups.Tree

	mu       sync.Mutex
	sessions map[string]*session
	pending  map[uint32]int // creations under way, by owner, for the quotas
	// execSlots bounds executions running at once, host-wide.
	execSlots chan struct{}
	closed    bool

	metrics  *metrics
	recorder *recorder
	// monitor hears of refused system calls; nil when they are not logged.
	monitor *seccomp.Monitor
	denied  *deniedLog
	// ids gives sessions their user-namespace id blocks; nil when off.
	ids *idmap.Allocator
	// templates, under mu, are the templates by name, each with its warm
	// pool. tmplMu serialises adding, importing and removing them.
	templates map[string]*template
	tmplMu    sync.Mutex
	// fillSlot is the one refill all warm pools take turns at.
	fillSlot chan struct{}
	// pristine makes session disks as copies of a pristine image.
	pristine *volume.Pristine
	// background counts work left running after a request answered.
	background sync.WaitGroup

	stopReaper context.CancelFunc
	reaperDone chan struct{}
}

// session is one session in memory. mu guards rec and sb; it is held only
// for short state changes, never across an execution.
type session struct {
	mu  sync.Mutex
	rec *store.Record
	sb  *isolation.Sandbox // nil unless running
	// busy is set while an execution runs, so the idle reaper spares it.
	busy bool
}

// New opens the state, prepares cgroups and the sandbox runtime, and
// reconciles what the database says with what exists.
func New(ctx context.Context, cfg Config, log *slog.Logger) (_ *Daemon, retErr error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	for _, d := range []string{cfg.DataDir, cfg.RunDir, filepath.Join(cfg.DataDir, "sessions")} {
		if err := os.MkdirAll(d, 0o711); err != nil {
			return nil, fmt.Errorf("make %s: %w", d, err)
		}
	}
	st, err := store.Open(filepath.Join(cfg.DataDir, "sandboxd.db"), store.Options{HistoryLimit: cfg.HistoryLimit, HistoryTotalLimit: cfg.HistoryTotalLimit})
	if err != nil {
		return nil, err
	}
	defer func() {
		if retErr != nil {
			st.Close()
		}
	}()
	tree, err := cgroups.Setup(ctx, "sandboxd", systemdMainProcess(), log)
	if err != nil {
		return nil, fmt.Errorf("cgroups: %w", err)
	}
	d := &Daemon{
		cfg:       cfg,
		log:       log,
		store:     st,
		tree:      tree,
		sessions:  map[string]*session{},
		pending:   map[uint32]int{},
		execSlots: make(chan struct{}, cfg.MaxConcurrentExecs),
		fillSlot:  make(chan struct{}, 1),
		pristine:  &volume.Pristine{Dir: filepath.Join(cfg.DataDir, "disk-images")},
	}
	d.metrics = newMetrics(d)
	stateDir := filepath.Join(cfg.RunDir, "state")
	if err := os.MkdirAll(stateDir, 0o711); err != nil {
		return nil, err
	}
	if cfg.Seccomp.LogDenied {
		if !seccomp.NotifySupported() {
			log.Warn("seccomp user notification needs Linux 5.7 and libseccomp 2.5: refused system calls will not be logged")
		} else {
			d.denied = newDeniedLog(log, func(sc string) { d.metrics.denied.WithLabelValues(sc).Inc() })
			if d.monitor, err = seccomp.Listen(filepath.Join(stateDir, "seccomp.sock"), d.denied.report); err != nil {
				return nil, err
			}
			defer func() {
				if retErr != nil {
					d.monitor.Close()
				}
			}()
		}
	}
	if cfg.UserNS.Enabled {
		if r := (hostcheck.Host{Proc: "/proc"}).UserNamespaces(); r.Status != hostcheck.OK && r.Status != hostcheck.Info {
			return nil, fmt.Errorf("user namespaces: %s: enable them, or turn them off for sandboxes with [userns] enabled = false", r.Detail)
		}
		if d.ids, err = idmap.New(cfg.UserNS.idRange()); err != nil {
			return nil, err
		}
	}
	if d.rt, err = isolation.NewRuntime(isolation.Options{
		StateDir: stateDir,
		UID:      cfg.SandboxUID,
		GID:      cfg.SandboxGID,
		UserNS:   cfg.UserNS.Enabled,
		Seccomp:  cfg.Seccomp,
		Cgroups:  tree,
		Monitor:  d.monitor,
	}); err != nil {
		return nil, err
	}
	d.recorder = newRecorder(st, log)
	if err := d.loadTemplates(); err != nil {
		return nil, err
	}
	if err := d.reconcile(ctx); err != nil {
		return nil, err
	}
	rctx, cancel := context.WithCancel(context.Background())
	d.stopReaper = cancel
	d.reaperDone = make(chan struct{})
	go d.reapIdle(rctx)
	d.startPools()
	log.Info("sandboxd ready", "cgroup_version", tree.Version, "cgroup_parent", tree.Parent,
		"sandbox_uid", d.rt.UID(), "user_namespaces", cfg.UserNS.Enabled, "sessions", len(d.sessions))
	return d, nil
}

// Close lets go of every running session, which runs on for the next
// daemon to restore (or, with shutdown_stops_sessions, stops them, keeping
// their workspaces), and closes the database.
func (d *Daemon) Close(ctx context.Context) error {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return nil
	}
	d.closed = true
	all := make([]*session, 0, len(d.sessions))
	for _, s := range d.sessions {
		all = append(all, s)
	}
	d.mu.Unlock()
	d.stopReaper()
	<-d.reaperDone
	d.closePools()
	d.background.Wait()
	var errs []error
	left := 0
	stopAll := d.cfg.ShutdownStopsSessions
	if !stopAll && d.tree.Version == 2 && systemdMainProcess() && d.tree.Scope == "" && len(all) > 0 {
		// A systemd service on cgroup v2 without its scope (no systemd
		// API): while sandboxes hold the unit's cgroup (its controllers
		// enabled for them), systemd before 254 cannot place the next
		// daemon in it (status=219/CGROUP), so the service could not start
		// again. Sessions stop, files kept.
		d.log.Info("stopping sessions: under systemd the unit's cgroup must be free for the next start")
		stopAll = true
	}
	for _, s := range all {
		if stopAll {
			if err := d.stopSession(ctx, s, "the daemon shut down"); err != nil {
				errs = append(errs, err)
			}
		} else {
			s.mu.Lock()
			sb := s.sb
			s.sb = nil // the watcher lets go too
			s.mu.Unlock()
			if sb != nil {
				sb.Detach()
				left++
				continue
			}
		}
		// The disk of a session that does not run is mounted only while a
		// daemon serves its files; the next one mounts it again
		// (reconcileDisks).
		if err := volume.Unmount(d.sessionDir(s.rec.ID)); err != nil {
			errs = append(errs, err)
		}
	}
	if left > 0 {
		d.log.Info("sessions left running for the next daemon", "sessions", left)
	}
	d.recorder.close()
	if d.monitor != nil {
		errs = append(errs, d.monitor.Close())
	}
	errs = append(errs, d.tree.Remove(), d.store.Close())
	return errors.Join(errs...)
}

// systemdMainProcess reports whether this process is what a systemd unit
// started (not a child of it, such as a test's daemon): systemd (248+)
// names that process in SYSTEMD_EXEC_PID, which children inherit.
func systemdMainProcess() bool {
	return os.Getenv("SYSTEMD_EXEC_PID") == strconv.Itoa(os.Getpid())
}

// closePools empties every warm pool, for good.
func (d *Daemon) closePools() {
	d.mu.Lock()
	var pools []*pool
	for _, t := range d.templates {
		if t.pool != nil {
			pools = append(pools, t.pool)
			t.pool = nil
		}
	}
	d.mu.Unlock()
	for _, p := range pools {
		p.close()
	}
}

// lookup finds a session the caller may see. Another user's session is
// "not found", exactly like a missing one.
func (d *Daemon) lookup(ctx context.Context, id string) (*session, error) {
	caller := identity.From(ctx)
	d.mu.Lock()
	s, ok := d.sessions[id]
	d.mu.Unlock()
	if ok {
		s.mu.Lock()
		owner := s.rec.OwnerUID
		s.mu.Unlock()
		if caller.IsRoot() || owner == caller.UID {
			return s, nil
		}
	}
	return nil, api.Errorf(errdefs.ErrNotFound, "no such session: %s", id)
}

// snapshot is a copy of the session's public record.
func (s *session) snapshot() api.Session {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.rec.Session
	if out.Labels != nil {
		l := make(map[string]string, len(out.Labels))
		for k, v := range out.Labels {
			l[k] = v
		}
		out.Labels = l
	}
	return out
}

// sessionDir is the folder of everything a session keeps on disk (see
// package volume for what is in it).
func (d *Daemon) sessionDir(id string) string {
	return filepath.Join(d.cfg.DataDir, "sessions", id)
}

func (d *Daemon) workspaceOf(id string) string { return volume.Workspace(d.sessionDir(id)) }

func newID() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func now() time.Time { return time.Now().UTC() }
