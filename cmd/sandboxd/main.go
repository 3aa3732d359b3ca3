// Command sandboxd is the sandbox daemon: it serves the sandboxd API on a
// Unix socket and runs each session in a sandbox of its own.
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	// Linking isolation makes this binary its own container init: its
	// package init runs before main, as libcontainer requires.
	"github.com/sandboxd/sandboxd/cgroups"
	"github.com/sandboxd/sandboxd/daemon"
	"github.com/sandboxd/sandboxd/daemon/config"
	"github.com/sandboxd/sandboxd/daemon/server"
	"github.com/sandboxd/sandboxd/internal/identity"
	"github.com/sandboxd/sandboxd/internal/manpage"
	"github.com/sandboxd/sandboxd/internal/systemd"
	"github.com/sandboxd/sandboxd/internal/version"
	_ "github.com/sandboxd/sandboxd/isolation"
	"github.com/sandboxd/sandboxd/isolation/agent"
	"github.com/sandboxd/sandboxd/isolation/runc"
	// Hands a sandbox's init over to sandboxd-init, when the daemon names
	// it (handOffInit).
	_ "github.com/sandboxd/sandboxd/isolation/selfinit/handoff"
)

func main() {
	if len(os.Args) == 2 && os.Args[1] == cgroups.KeeperArg {
		cgroups.Keep() // holds the sandboxes' systemd scope
	}
	if err := newCommand().Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "sandboxd:", err)
		os.Exit(1)
	}
}

type flags struct {
	config, socket, dataDir, runDir, logLevel string
	validate, recover                         bool
}

func newCommand() *cobra.Command {
	var f flags
	cmd := &cobra.Command{
		Use:   "sandboxd",
		Short: "Run untrusted code in sandboxes, served over a Unix socket",
		Long: `sandboxd runs untrusted code - Python sessions whose variables persist,
shell commands, one-shot runs - in sandboxes built from Linux namespaces,
cgroups and seccomp, and serves its API on a Unix socket (see sandboxctl).

Its state is one database, DATA-DIR/sandboxd.db, checked whole at every
start. A damaged one stops the start with one line saying so; with the
daemon stopped, sandboxd --recover salvages what it holds into a new
database (the damaged file is kept as sandboxd.db.corrupt-TIME), or,
when nothing of it can be read, brings back DATA-DIR/sandboxd.db.last-good,
the copy each sound start makes. A database over 32 MiB and twice its
live data is compacted at start.`,
		Version:       version.Version,
		SilenceUsage:  true,
		SilenceErrors: true,
		Args:          cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := config.Load(f.config)
			if err != nil {
				return err
			}
			set := cmd.Flags().Changed
			if set("socket") {
				cfg.Socket = f.socket
			}
			if set("data-dir") {
				cfg.DataDir = f.dataDir
			}
			if set("run-dir") {
				cfg.RunDir = f.runDir
			}
			if set("log-level") {
				cfg.LogLevel = f.logLevel
			}
			if err := cfg.Validate(); err != nil {
				return err
			}
			if f.validate {
				if err := daemon.CheckStrictRuntime(&cfg); err != nil {
					return err
				}
				fmt.Println("configuration is valid")
				return nil
			}
			if f.recover {
				return recoverDatabase(cmd.OutOrStdout(), cfg)
			}
			return run(cfg)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.config, "config", "", "configuration file (TOML)")
	fl.StringVar(&f.socket, "socket", "/run/sandboxd/sandboxd.sock", "path of the API socket")
	fl.StringVar(&f.dataDir, "data-dir", "/var/lib/sandboxd", "persistent state: database and workspaces")
	fl.StringVar(&f.runDir, "run-dir", "/run/sandboxd", "runtime state")
	fl.StringVar(&f.logLevel, "log-level", "info", "debug, info, warn or error")
	fl.BoolVar(&f.validate, "validate", false, "check the configuration and exit")
	fl.BoolVar(&f.recover, "recover", false, "salvage a corrupted database into a new one (the damaged file is kept aside), say what was saved, and exit; the daemon must be stopped")
	cmd.MarkFlagsMutuallyExclusive("validate", "recover")
	cmd.CompletionOptions.DisableDefaultCmd = true
	cmd.AddCommand(manpage.Command(cmd, "8"))
	return cmd
}

// newLogger logs JSON lines to standard error, or, under systemd, to
// journald with each attribute a field of its own.
func newLogger(level string) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("bad log level %q: use debug, info, warn or error", level)
	}
	if systemd.JournalAvailable() {
		return slog.New(systemd.NewJournalHandler(l)), nil
	}
	return slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: l})), nil
}

// listen is the API socket: the one systemd passed (socket activation),
// else one made at cfg.Socket.
func listen(cfg config.Config, log *slog.Logger) (l net.Listener, activated bool, err error) {
	if l, err = systemd.Listener(); err != nil || l != nil {
		if l != nil && l.Addr().String() != cfg.Socket {
			log.Warn("the socket systemd passed is not the configured one", "passed", l.Addr().String(), "socket", cfg.Socket)
		}
		return l, l != nil, err
	}
	l, err = server.Listen(cfg.Socket, cfg.SocketGroup)
	return l, false, err
}

// status is the unit's status line: the daemon's own view, all sessions.
func status(ctx context.Context, d *daemon.Daemon) string {
	info, err := d.Info(identity.With(ctx, identity.Internal()))
	if err != nil {
		return err.Error()
	}
	return fmt.Sprintf("%d sessions running, %d stopped, %d failed; warm pools %d of %d ready",
		info.Sessions.Running, info.Sessions.Stopped, info.Sessions.Failed, info.Pool.Idle, info.Pool.Size)
}

// euid is the daemon's effective uid; the tests that run it as a process
// reach steps before the first that needs root as an ordinary user.
var euid = os.Geteuid

func run(cfg config.Config) error {
	if euid() != 0 {
		return errors.New("sandboxd must run as root: it builds sandboxes from namespaces, cgroups and mounts (start it with sudo, or as the systemd service sandboxd)")
	}
	// The folders the daemon makes must let the sandboxes' ids through
	// (internal/hostcheck.Unreachable), whatever umask it was started
	// with (a host with umask 077 would make them 0700), as dockerd sets
	// its own.
	syscall.Umask(0o022)
	log, err := newLogger(cfg.LogLevel)
	if err != nil {
		return err
	}
	slog.SetDefault(log)
	handOffInit(log)
	// A client that hangs up must not kill the daemon.
	signal.Ignore(syscall.SIGPIPE)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	cfg.Supervisor = findSupervisor(ctx, log)

	// The socket first: a second daemon fails here before touching state.
	l, activated, err := listen(cfg, log)
	if err != nil {
		return err
	}
	// metrics_addr next, before any state: a taken port fails the start.
	var ml net.Listener
	if cfg.MetricsAddr != "" {
		if ml, err = server.ListenMetrics(cfg.MetricsAddr); err != nil {
			l.Close()
			return err
		}
	}
	d, err := daemon.New(ctx, cfg, log)
	if err != nil {
		l.Close()
		if ml != nil {
			ml.Close()
		}
		return err
	}
	// Each area is served by its owner: the node (daemon/node), the files
	// (daemon/sandboxfs), the templates (daemon/pool); the daemon the rest.
	srv := server.New(server.Backends{
		SystemBackend:   d,
		NodeBackend:     d.Node(),
		SessionBackend:  d,
		ExecBackend:     d,
		HistoryBackend:  d.History(),
		ProcessBackend:  d.Processes(),
		FileBackend:     d.Files(),
		TemplateBackend: d.Templates(),
		ContextBackend:  d.State().Contexts,
		VolumeBackend:   d.State().Volumes,
		SnapshotBackend: d.State().Snapshots,
		UndoBackend:     d.State().Undo,
	}, server.Options{
		MaxRequestBytes: cfg.MaxRequestBytes,
		MaxUploadBytes:  cfg.MaxUploadBytes,
		Metrics:         d.Metrics().Handler(),
		OnPanic:         d.Metrics().CountPanic,
		Registerer:      d.Metrics().Registry(),
	}, log)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(l) }()
	log.Info("serving", "socket", l.Addr().String(), "socket_activated", activated)
	msrv := serveMetrics(ml, d, log)
	systemd.Ready(status(ctx, d))
	wctx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	go systemd.Watch(wctx, func() string { return status(wctx, d) })

	var serveErr error
	select {
	case <-ctx.Done():
		log.Info("shutting down")
	case serveErr = <-errc:
	}
	stopWatch()
	systemd.Stopping()
	sctx, cancel := context.WithTimeout(context.Background(), time.Duration(cfg.ShutdownGraceS*float64(time.Second)))
	defer cancel()
	// In reverse order of start: the scrapers' listener, the API, the core.
	errs := []error{serveErr, msrv.shutdown(sctx), srv.Shutdown(sctx), d.Close(sctx)}
	if !activated {
		_ = os.Remove(cfg.Socket) // systemd's socket stays for the next start
	}
	return errors.Join(errs...)
}

// initBinary is the container init sandboxd's packages install in
// /usr/libexec/sandboxd, and make build beside the daemon in bin/.
const initBinary = "sandboxd-init"

// findSupervisor finds the native supervisor sandboxes start with in the
// Python supervisor's place (agent.SupervisorBinary), beside this
// executable or in ../libexec/sandboxd (the packages' place), as
// handOffInit finds sandboxd-init; "" (the Python supervisor) without one
// of this build.
func findSupervisor(ctx context.Context, log *slog.Logger) string {
	exe, err := os.Executable()
	if err != nil {
		log.Warn("sandboxes start with the Python supervisor", "err", err)
		return ""
	}
	dir := filepath.Dir(exe)
	for _, p := range []string{filepath.Join(dir, agent.SupervisorBinary), filepath.Join(dir, "..", "libexec", "sandboxd", agent.SupervisorBinary)} {
		if _, err := os.Stat(p); errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err := agent.CheckSupervisor(ctx, p); err != nil {
			log.Warn("sandboxes start with the Python supervisor", "err", err)
			return ""
		}
		log.Debug("sandboxes start with "+agent.SupervisorBinary, "path", p)
		return p
	}
	log.Debug("no " + agent.SupervisorBinary + " beside the daemon or in ../libexec/sandboxd: sandboxes start with the Python supervisor, ~2.5 MiB more each")
	return ""
}

// handOffInit has runc sandboxes start with sandboxd-init in place of this
// binary's own init: ~190 packages' init less at every start (see
// docs/performance.md). Without it they start as before.
func handOffInit(log *slog.Logger) {
	exe, err := os.Executable()
	if err != nil {
		log.Warn("sandboxes start with the daemon's own init", "err", err)
		return
	}
	dir := filepath.Dir(exe)
	for _, p := range []string{filepath.Join(dir, initBinary), filepath.Join(dir, "..", "libexec", "sandboxd", initBinary)} {
		err = runc.HandOffInit(p)
		if err == nil {
			log.Debug("sandboxes start with "+initBinary, "path", p)
			return
		}
		if !errors.Is(err, os.ErrNotExist) {
			log.Warn("sandboxes start with the daemon's own init", "err", err)
			return
		}
	}
	log.Debug("no " + initBinary + " beside the daemon or in ../libexec/sandboxd: sandboxes start with the daemon's own init, ~5 ms slower")
}
