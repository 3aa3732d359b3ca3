// Package daemon is sandboxd's core: it owns the sessions, each a sandbox
// from a Runtime with its record in package store, and implements the
// operations the API serves, one operation per file.
//
// How it is put together:
//
//	server (HTTP) ─► Daemon ─► table of sessions (table.go), each with its
//	                 │          state (package daemon/session: the one owner of status)
//	                 ├─► templates (package daemon/pool), each with its warm pool
//	                 ├─► authorization (authz.go), events (events.go)
//	                 ├─► journal (journal.go): records, events, the exit watcher
//	                 └─► launcher (launcher.go) ─► Runtime / Sandbox (runtime.go) ─► isolation
//
// Locks: the table's, then a session's; templates and each pool have
// their own; none is held across a sandbox start or an execution.
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
	"sync/atomic"
	"time"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/cgroups"
	"github.com/sandboxd/sandboxd/daemon/config"
	"github.com/sandboxd/sandboxd/daemon/disk"
	"github.com/sandboxd/sandboxd/daemon/execution"
	"github.com/sandboxd/sandboxd/daemon/mcpgateway"
	"github.com/sandboxd/sandboxd/daemon/metrics"
	"github.com/sandboxd/sandboxd/daemon/node"
	"github.com/sandboxd/sandboxd/daemon/pool"
	"github.com/sandboxd/sandboxd/internal/hostcheck"
	"github.com/sandboxd/sandboxd/internal/identity"
	"github.com/sandboxd/sandboxd/internal/logging"
	"github.com/sandboxd/sandboxd/isolation"
	"github.com/sandboxd/sandboxd/isolation/idmap"
	"github.com/sandboxd/sandboxd/isolation/runc"
	"github.com/sandboxd/sandboxd/isolation/runsc"
	"github.com/sandboxd/sandboxd/isolation/volume"
	"github.com/sandboxd/sandboxd/seccomp"
	"github.com/sandboxd/sandboxd/store"
)

// Daemon holds every session of this host.
type Daemon struct {
	// inCreate counts the creates under way, which refills yield to.
	inCreate atomic.Int64

	cfg   config.Config
	paths layout
	log   *slog.Logger
	store *store.Store
	rt    Runtime
	inst  instance
	// runtimes choose a session's runtime among what rt said of its
	// runtimes at start (runtimes.go).
	runtimes runtimeRules

	sessions *table
	tmpl     *pool.Templates
	events   *events

	metrics *metrics.Metrics
	// execs keeps the account of executions: live, history, answers.
	execs *execution.Book
	// monitor hears of refused system calls; nil when they are not logged.
	monitor *seccomp.Monitor
	denied  *deniedLog
	// launch starts and destroys sandboxes (launcher.go).
	launch *launcher
	// net gives sessions with a network policy their networks, by its
	// owner (nil when the host cannot: net.off says why).
	net sessionNets
	// disk holds the disk promised to each session, so that no create is
	// promised space the host lacks (package disk).
	disk *disk.Admission
	// volumes are the volumes creates under way will mount (volumes.go).
	volumes volumeUse
	// background counts work left running after a request answered.
	background sync.WaitGroup
	// creating are the creates under way with an Idempotency-Key.
	creating creating
	// node is the daemon as schedulers see it: its id, health and drain
	// state (package daemon/node).
	node *node.Node
	// gateway serves the MCP gateways of sessions granted MCP servers.
	gateway *mcpgateway.Gateway
	// procView is the lxcfs sandboxes see their /proc files from
	// (procview.go).
	procView procView
	// clock is what the reaper and the pools time by (clock.go).
	clock clock
	// own is the context of the daemon's own work (the reaper, the pools,
	// restores): it acts as the daemon, logs with its logger, and outlives
	// any request.
	own context.Context
	// journal writes, publishes and counts sessions' state changes
	// (journal.go).
	journal *journal

	stopReaper context.CancelFunc
	reaperDone chan struct{}
	closeOnce  sync.Once
	closeErr   error
}

// deps are what New builds for the daemon's core and a test hands it
// directly: the store, the runtime and, when sandboxes get user
// namespaces, the id allocator.
type deps struct {
	store   *store.Store
	rt      Runtime
	ids     *idmap.Allocator
	monitor *seccomp.Monitor
	denied  *deniedLog
	inst    instance
	// probe reads the host's disk (nil: package volume's answers).
	probe disk.Probe
	net   netDeps
	// host is what GET /v1/node reads (nil: this host).
	host *node.Host
	// procView is the lxcfs sandboxes get (procview.go).
	procView procView
	// clock is what the reaper and the pools time by (nil: realClock).
	clock clock
}

// New opens the state, prepares cgroups and the sandbox runtime, and
// reconciles what the database says with what exists.
func New(ctx context.Context, cfg config.Config, log *slog.Logger) (_ *Daemon, retErr error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := makeDirs(cfg); err != nil {
		return nil, err
	}
	inst, err := loadInstance(cfg.DataDir)
	if err != nil {
		return nil, err
	}
	st, err := openStore(cfg)
	if err != nil {
		return nil, err
	}
	logStoreReport(log, st.Report())
	var cleanups []func()
	defer func() {
		if retErr != nil {
			for i := len(cleanups) - 1; i >= 0; i-- {
				cleanups[i]()
			}
			st.Close()
		}
	}()
	// A folder sandboxes cannot enter fails every create deep in runc's
	// init ("remount-propagation … permission denied"): say so at start
	// (after the database: a second daemon on this data dir is told that
	// first).
	for _, dir := range []string{cfg.DataDir, cfg.RunDir} {
		if why := hostcheck.Unreachable(dir); why != "" {
			return nil, errors.New(why)
		}
	}
	tree, err := cgroups.Setup(ctx, inst.cgroupName(cgroups.Detect()), systemdMainProcess(), log)
	if err != nil {
		return nil, fmt.Errorf("cgroups: %w", err)
	}
	cleanups = append(cleanups, func() { _ = tree.Remove() })
	stateDir := inst.stateDir(cfg.RunDir)
	if err := os.MkdirAll(stateDir, 0o711); err != nil {
		return nil, err
	}
	dp := deps{store: st, inst: inst}
	dp.procView = openProcView(cfg, stateDir, log)
	// An lxcfs that served before this start (left for running sessions)
	// stays; one this start made goes with it.
	cleanups = append(cleanups, func() { _ = dp.procView.close(dp.procView.own != nil && dp.procView.own.Adopted()) })
	m := metrics.New()
	if cfg.Seccomp.LogDenied {
		if !seccomp.NotifySupported() {
			log.Warn("seccomp user notification needs Linux 5.7 and libseccomp 2.5: refused system calls will not be logged")
		} else {
			dp.denied = newDeniedLog(log, func(sc string) { m.SeccompDenied(sc) })
			if dp.monitor, err = seccomp.Listen(filepath.Join(stateDir, "seccomp.sock"), dp.denied.report); err != nil {
				return nil, err
			}
			cleanups = append(cleanups, func() { dp.monitor.Close() })
		}
	}
	if cfg.UserNS.Enabled {
		if r := (hostcheck.Host{Proc: "/proc"}).UserNamespaces(); r.Status != hostcheck.OK && r.Status != hostcheck.Info {
			return nil, fmt.Errorf("user namespaces: %s: enable them, or turn them off for sandboxes with [userns] enabled = false", r.Detail)
		}
		rng, err := idmap.Lease(idmap.LeaseRequest{
			Dir: cfg.UserNS.LeaseDir, Instance: inst.id, DataDir: cfg.DataDir,
			Want: cfg.UserNS.IDRange(), Move: !cfg.UserNS.IDBaseSet(),
		})
		if err != nil {
			return nil, err
		}
		if rng != cfg.UserNS.IDRange() {
			log.Info("another sandboxd holds the configured user-namespace id range: this one uses the next free one", "id_base", rng.Base, "blocks", rng.Blocks)
		}
		if dp.ids, err = idmap.New(rng); err != nil {
			return nil, err
		}
	}
	runscOpts := runscOptions(&cfg)
	rt, err := isolation.NewRuntime(isolation.Options{
		StateDir: stateDir,
		UID:      cfg.SandboxUID,
		GID:      cfg.SandboxGID,
		UserNS:   cfg.UserNS.Enabled,
		Seccomp:  cfg.Seccomp,
		Cgroups:  tree,
		Monitor:  dp.monitor,
		LXCFSDir: dp.procView.dir,
		// The native supervisor, if the daemon's command found one.
		Supervisor: cfg.Supervisor,
		// The engines of the runtimes a session can name: the daemon
		// chooses them, so that isolation imports neither.
		Engines: map[string]isolation.NewEngine{
			isolation.RuntimeRunc:  runc.New,
			isolation.RuntimeRunsc: runsc.New(runscOpts),
		},
	})
	if err != nil {
		return nil, err
	}
	dp.rt = libcontainerRuntime{rt}
	dp.net = openNetwork(cfg, inst, m, log)
	cleanups = append(cleanups, func() {
		if dp.net.net == nil {
			return
		}
		// A daemon that fails to start with no session keeps no table nor
		// subnet: no sandbox of its needs them.
		recs, err := st.Sessions()
		if err := dp.net.net.Close(err == nil && len(recs) == 0); err != nil {
			log.Warn("remove the network of a daemon that did not start", "err", err)
		}
	})
	return newDaemon(ctx, cfg, log, m, dp)
}

// makeDirs makes the daemon's folders.
func makeDirs(cfg config.Config) error {
	for _, d := range []string{cfg.DataDir, cfg.RunDir, filepath.Join(cfg.DataDir, "sessions")} {
		if err := os.MkdirAll(d, 0o711); err != nil {
			return fmt.Errorf("make %s: %w", d, err)
		}
	}
	return nil
}

// newDaemon is the daemon's core over its dependencies: New's real ones,
// or a test's fakes. It loads templates, reconciles, and starts the
// reaper and the pools.
func newDaemon(ctx context.Context, cfg config.Config, log *slog.Logger, m *metrics.Metrics, dp deps) (*Daemon, error) {
	if err := makeDirs(cfg); err != nil {
		return nil, err
	}
	d := &Daemon{
		cfg:      cfg,
		paths:    layout{dataDir: cfg.DataDir},
		log:      log,
		store:    dp.store,
		rt:       dp.rt,
		inst:     dp.inst,
		monitor:  dp.monitor,
		denied:   dp.denied,
		sessions: newTable(),
		events:   newEvents(),
		disk:     disk.New(cfg, dp.probe, log),
		metrics:  m,
		net:      sessionNets{owner: dp.net.net, off: dp.net.off, newNS: dp.rt.NewNetNS},
		procView: dp.procView,
		clock:    dp.clock,
	}
	if d.clock == nil {
		d.clock = realClock{}
	}
	d.own = logging.With(identity.With(context.Background(), identity.Internal()), log)
	d.journal = &journal{sessions: d.sessions, store: d.store, events: d.events, metrics: m, log: log, own: d.own, mcpServers: cfg.MCP.Servers}
	if d.net.owner == nil && d.net.off == "" {
		d.net.off = "networking is off on this host ([network] enabled = false)"
	}
	d.gateway = mcpgateway.New(cfg.MCP, filepath.Join(dp.inst.stateDir(cfg.RunDir), "mcp"), log, d.journal.mcpCall)
	n, err := node.New(cfg, dp.inst.id, dp.host, nodeSource{d}, log)
	if err != nil {
		return nil, err
	}
	d.node = n
	d.runtimes = newRuntimeRules(&cfg, d.rt.Info().Runtimes)
	d.net.runtimes = d.runtimes
	if err := d.runtimes.checkStrict(); err != nil {
		return nil, err
	}
	// Start-up work is the daemon's own, logged as such.
	ctx = logging.With(identity.With(ctx, identity.Internal()), log)
	d.execs = execution.NewBook(d.store, execution.Options{
		MaxOutput: d.cfg.MaxOutputBytes, MaxAnswer: d.cfg.MaxAnswerBytes, RecordBytes: d.cfg.HistoryRecordBytes,
		MaxConcurrent: d.cfg.MaxConcurrentExecs, Grace: time.Duration(d.cfg.InterruptGraceS * float64(time.Second)),
		Counted: func(e *api.Execution, took time.Duration) {
			if took > 0 {
				m.ExecEnded(e.Language, e.Status, took)
			} else {
				m.ExecLost(e.Language, e.Status)
			}
		},
		NewID: newID, Now: now, OnWriteError: m.HistoryWriteFailed, Log: log,
		Kept: func(s execution.Session) bool {
			ss, ok := s.(*session)
			return ok && d.sessions.has(ss)
		},
	})
	d.launch = &launcher{
		paths: d.paths, rt: d.rt, runtimes: d.runtimes, ids: dp.ids, disk: d.disk, gateway: d.gateway,
		net: d.net, execs: d.execs, metrics: m, denied: d.denied, own: d.own,
	}
	m.Watch(metricSource{d})
	if d.tmpl, err = pool.New(poolOptions(d)); err != nil {
		d.execs.Close()
		return nil, err
	}
	d.launch.tmpl = d.tmpl
	if err := d.reconcile(ctx); err != nil {
		d.execs.Close()
		return nil, err
	}
	rctx, cancel := context.WithCancel(context.Background())
	d.stopReaper = cancel
	d.reaperDone = make(chan struct{})
	go d.reapIdle(rctx)
	d.tmpl.StartPools()
	info := d.rt.Info()
	if info.ShowsHostPaths {
		log.Warn("overlayfs cannot be mounted here: sandboxes see the host paths of their /etc and image folders in their mount table")
	}
	if info.ProcViewProblem != "" && d.cfg.LXCFSDir != "" {
		log.Warn("lxcfs is not serving: sandboxes show the host's /proc/meminfo, cpuinfo, stat and uptime, not their own limits (install lxcfs, or set lxcfs_dir = \"\" to silence this)", "lxcfs_dir", d.cfg.LXCFSDir, "problem", info.ProcViewProblem)
	}
	log.Info("sandboxd ready", "instance", d.inst.id, "node_id", d.node.ID(), "runtime", info.Name, "cgroup_version", info.CgroupVersion,
		"sandbox_uid", d.rt.UID(), "user_namespaces", d.launch.ids != nil, "lxcfs", d.procView.info(info.ProcViewProblem == "").ServedBy, "sessions", len(d.sessions.all()))
	return d, nil
}

// Close lets go of every running session, which runs on for the next
// daemon to restore (or, with shutdown_stops_sessions, stops them, keeping
// their workspaces), and closes the database.
func (d *Daemon) Close(ctx context.Context) error {
	d.closeOnce.Do(func() { d.closeErr = d.close(ctx) })
	return d.closeErr
}

func (d *Daemon) close(ctx context.Context) error {
	all, _ := d.sessions.close()
	d.stopReaper()
	<-d.reaperDone
	d.tmpl.Close()
	d.background.Wait()
	// Executions started with wait false may end within the grace; those
	// that do not lose their sandbox's connection below (detached: the
	// next daemon records how they ended, as "lost"; stopped: as killed)
	// and end at once.
	d.execs.Runs.Close(ctx)
	var errs []error
	left := 0
	stopAll := d.cfg.ShutdownStopsSessions
	if info := d.rt.Info(); !stopAll && info.CgroupVersion == 2 && systemdMainProcess() && !info.InScope && len(all) > 0 {
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
		} else if sb := s.TakeSandbox(); sb != nil {
			sb.Detach()
			left++
			continue
		}
		// The disk of a session that does not run is mounted only while a
		// daemon serves its files; the next one mounts it again
		// (disk.Reconcile).
		if err := volume.Unmount(d.paths.session(s.ID())); err != nil {
			errs = append(errs, err)
		}
	}
	if left > 0 {
		d.log.Info("sessions left running for the next daemon", "sessions", left)
	}
	d.execs.Runs.Wait()
	// The servers' processes go; a running session's folder stays, for
	// the next daemon to serve.
	d.gateway.Shutdown()
	d.execs.Close()
	if d.net.owner != nil {
		// A daemon with no session left keeps no table nor subnet.
		errs = append(errs, d.net.owner.Close(len(all) == 0))
	}
	// Sandboxes left running bind the daemon's own lxcfs's files: it runs
	// on for them, and the next daemon adopts it.
	errs = append(errs, d.procView.close(left > 0))
	if d.monitor != nil {
		errs = append(errs, d.monitor.Close())
	}
	// A daemon with no session left holds no host ids: its range is free
	// for other daemons.
	if d.launch.ids != nil && len(all) == 0 {
		errs = append(errs, idmap.ReleaseLease(d.cfg.UserNS.LeaseDir, d.inst.id))
	}
	errs = append(errs, d.rt.Close(), d.store.Close())
	return errors.Join(errs...)
}

// systemdMainProcess reports whether this process is what a systemd unit
// started (not a child of it, such as a test's daemon): systemd (248+)
// names that process in SYSTEMD_EXEC_PID, which children inherit.
func systemdMainProcess() bool {
	return os.Getenv("SYSTEMD_EXEC_PID") == strconv.Itoa(os.Getpid())
}

// lookup finds a session the caller may see. Another user's session is
// "not found", exactly like a missing one.
func (d *Daemon) lookup(ctx context.Context, id string) (*session, error) {
	caller := callerFrom(ctx)
	if s, ok := d.sessions.get(id); ok {
		if _, owner := s.Status(); caller.mayUse(owner) {
			return s, nil
		}
	}
	return d.sessions.resolve(id, caller)
}

// snapshot is the session as the API shows it.
func (s *session) snapshot() api.Session {
	rec := s.Snapshot()
	return sessionView(&rec)
}

func newID() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func now() time.Time { return time.Now().UTC() }
