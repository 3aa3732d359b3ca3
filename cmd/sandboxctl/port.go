package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/spf13/cobra"
)

// newPortCmd forwards a local address to a port inside a session.
func newPortCmd(a *app) *cobra.Command {
	var listen, unixPath string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "port ID PORT",
		Short: "Serve a port inside a session on a local URL (HTTP and WebSocket), until interrupted",
		Long: `port serves, on a loopback TCP address (--listen, 127.0.0.1 on a free port
by default) or on a Unix socket (--unix), everything the server on PORT
inside the session answers: an agent's web app, previewed in a browser.
It prints the URL and serves until interrupted. The address is for this
machine only: loopback addresses alone are taken.`,
		Example: `  sandboxctl port 3f2a 8000
  sandboxctl port 3f2a 5173 --listen 127.0.0.1:5173
  sandboxctl port 3f2a 8000 --unix /tmp/preview.sock`,
		Args:              cobra.ExactArgs(2),
		ValidArgsFunction: a.completeSessionFirst,
		RunE: func(cmd *cobra.Command, args []string) error {
			id := args[0]
			port, err := strconv.Atoi(args[1])
			if err != nil || port < 1 || port > 65535 {
				return fmt.Errorf("port %q is not a number between 1 and 65535", args[1])
			}
			l, url, err := listenLocal(listen, unixPath)
			if err != nil {
				return err
			}
			defer l.Close()
			if unixPath != "" {
				defer os.Remove(unixPath)
			}
			if _, err := a.client().GetSession(cmd.Context(), id); err != nil {
				return err
			}
			if asJSON {
				if err := printJSON(os.Stdout, map[string]any{"url": url, "session": id, "port": port}); err != nil {
					return err
				}
			} else {
				fmt.Println(url)
			}
			srv := &http.Server{Handler: a.client().PortProxy(id, port), ReadHeaderTimeout: 10 * time.Second}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			go func() {
				<-ctx.Done()
				sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
				defer cancel()
				_ = srv.Shutdown(sctx)
			}()
			if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
				return err
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&listen, "listen", "127.0.0.1:0", "the loopback address to serve on (port 0: a free one)")
	cmd.Flags().StringVar(&unixPath, "unix", "", "serve on this Unix socket instead")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the URL as JSON")
	return cmd
}

// listenLocal listens on a loopback address or a Unix socket, and says the
// URL it serves.
func listenLocal(addr, unixPath string) (net.Listener, string, error) {
	if unixPath != "" {
		l, err := net.Listen("unix", unixPath)
		if err != nil {
			return nil, "", fmt.Errorf("cannot listen on %s: %w", unixPath, errors.Unwrap(err))
		}
		return l, "unix:" + unixPath, nil
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, "", fmt.Errorf("--listen %q is not host:port", addr)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return nil, "", fmt.Errorf("--listen %q is not a loopback address: the port is served to this machine only", addr)
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, "", fmt.Errorf("cannot listen on %s: %w", addr, errors.Unwrap(err))
	}
	return l, "http://" + l.Addr().String() + "/", nil
}
