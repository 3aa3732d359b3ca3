// Command sandboxd is the sandbox daemon: it serves the sandboxd API on a
// Unix socket and runs each session in a sandbox of its own.
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/sandboxd/sandboxd/daemon"
	"github.com/sandboxd/sandboxd/daemon/server"
	"github.com/sandboxd/sandboxd/internal/version"
	// Linking isolation makes this binary its own container init: its
	// package init runs before main, as libcontainer requires.
	_ "github.com/sandboxd/sandboxd/isolation"
)

var _ server.Backend = (*daemon.Daemon)(nil)

func main() {
	if err := newCommand().Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "sandboxd:", err)
		os.Exit(1)
	}
}

type flags struct {
	config, socket, dataDir, runDir, logLevel string
	validate                                  bool
}

func newCommand() *cobra.Command {
	var f flags
	cmd := &cobra.Command{
		Use:   "sandboxd",
		Short: "Run untrusted code in sandboxes, served over a Unix socket",
		Long: `sandboxd runs untrusted code - Python sessions whose variables persist,
shell commands, one-shot runs - in sandboxes built from Linux namespaces,
cgroups and seccomp, and serves its API on a Unix socket (see sandboxctl).`,
		Version:       version.Version,
		SilenceUsage:  true,
		SilenceErrors: true,
		Args:          cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := daemon.LoadConfig(f.config)
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
				fmt.Println("configuration is valid")
				return nil
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
	return cmd
}

func newLogger(level string) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("bad log level %q: use debug, info, warn or error", level)
	}
	return slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: l})), nil
}

func run(cfg daemon.Config) error {
	log, err := newLogger(cfg.LogLevel)
	if err != nil {
		return err
	}
	slog.SetDefault(log)
	// A client that hangs up must not kill the daemon.
	signal.Ignore(syscall.SIGPIPE)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()

	// The socket first: a second daemon fails here before touching state.
	l, err := server.Listen(cfg.Socket, cfg.SocketGroup)
	if err != nil {
		return err
	}
	d, err := daemon.New(ctx, cfg, log)
	if err != nil {
		l.Close()
		return err
	}
	srv := server.New(d, server.Options{
		MaxRequestBytes: cfg.MaxRequestBytes,
		MaxUploadBytes:  cfg.MaxUploadBytes,
		Metrics:         d.MetricsHandler(),
	}, log)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(l) }()
	log.Info("serving", "socket", cfg.Socket)

	var serveErr error
	select {
	case <-ctx.Done():
		log.Info("shutting down")
	case serveErr = <-errc:
	}
	sctx, cancel := context.WithTimeout(context.Background(), time.Duration(cfg.ShutdownGraceS*float64(time.Second)))
	defer cancel()
	errs := []error{serveErr, srv.Shutdown(sctx), d.Close(sctx)}
	_ = os.Remove(cfg.Socket)
	return errors.Join(errs...)
}
