package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"os/user"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/sandboxd/sandboxd/e2b"
	"github.com/sandboxd/sandboxd/e2b/keys"
)

// e2bStateEnv names the E2B gateway's state folder (its keys and identity).
const e2bStateEnv = "SANDBOXD_E2B_STATE"

// e2bListenEnv is serve's --listen default: the packaged unit's
// /etc/sandboxd/e2b.env sets it, and doctor reads it there.
const e2bListenEnv = "SANDBOXD_E2B_LISTEN"

// The packaged gateway (contrib/systemd/sandboxd-e2b.service): its user,
// its StateDirectory, and the file its settings come from.
const (
	e2bUnit       = "sandboxd-e2b.service"
	e2bUser       = "sandboxd-e2b"
	e2bPackaged   = "/var/lib/sandboxd-e2b"
	e2bEnvFile    = "/etc/sandboxd/e2b.env"
	e2bListenDflt = "127.0.0.1:3000"
)

// Who runs sandboxctl, variables for tests.
var (
	geteuid     = os.Geteuid
	currentUser = user.Current
)

// e2bStateDir is the state folder: --state-dir, $SANDBOXD_E2B_STATE, the
// packaged unit's for root and for its user (so that `sudo -u sandboxd-e2b
// sandboxctl e2b key create` reaches the service's keys), else the user's
// own.
func e2bStateDir(flag string) string {
	if flag != "" {
		return flag
	}
	if d := os.Getenv(e2bStateEnv); d != "" {
		return d
	}
	if geteuid() == 0 {
		return e2bPackaged
	}
	if u, err := currentUser(); err == nil && u.Username == e2bUser {
		return e2bPackaged
	}
	if d := os.Getenv("XDG_STATE_HOME"); d != "" {
		return filepath.Join(d, "sandboxd-e2b")
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".local", "state", "sandboxd-e2b")
}

func newE2BCmd(a *app) *cobra.Command {
	var state string
	cmd := &cobra.Command{
		Use:   "e2b",
		Short: "Serve E2B's API, so that E2B's SDKs run unchanged against this host",
		Long: `e2b serves the API of E2B's cloud for one sandboxd host: code written for
E2B's SDKs (e2b, @e2b/code-interpreter) runs unchanged with three variables
set. The gateway is a client of the daemon's socket: it acts as the user who
runs it. Its API keys and identity live in its state folder (--state-dir,
$SANDBOXD_E2B_STATE; the default of root and of the packaged service's user
sandboxd-e2b is /var/lib/sandboxd-e2b).

See docs/e2b.md for what is served.`,
		Example: `  sandboxctl e2b serve --listen 127.0.0.1:3000 &
  export E2B_API_URL=http://127.0.0.1:3000 E2B_SANDBOX_URL=http://127.0.0.1:3000
  export E2B_API_KEY=$(sandboxctl e2b key create)
  node agent.js`,
	}
	cmd.PersistentFlags().StringVar(&state, "state-dir", "", "the gateway's state folder (default $"+e2bStateEnv+", else "+e2bPackaged+" for root and "+e2bUser+", ~/.local/state/sandboxd-e2b for others)")
	cmd.AddCommand(newE2BServeCmd(a, &state), newE2BKeyCmd(&state))
	return cmd
}

func newE2BServeCmd(a *app, state *string) *cobra.Command {
	var listen, network string
	var hosts, templates []string
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve E2B's API on a TCP address",
		Long: `serve listens on --listen and serves E2B's control plane and each sandbox's
envd and code interpreter on that one address (E2B_API_URL and
E2B_SANDBOX_URL both name it). Requests from web pages (an Origin header) and
for other host names are refused.

E2B templates "base" and "code-interpreter-v1" are the sandboxd template
` + e2b.BaseTemplate + ` unless --template maps them: the gateway makes it if the caller
(or root) has none, from the daemon's python template, with E2B's user ("user",
at home in /home/user, where code starts). Any other template id names a
sandboxd template. A sandbox gets a network only when its create asks
(allowInternetAccess), unless --network open.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ks, err := keys.Open(e2bStateDir(*state))
			if err != nil {
				return err
			}
			id, err := e2b.LoadIdentity(e2bStateDir(*state))
			if err != nil {
				return err
			}
			tm := map[string]string{}
			for _, t := range templates {
				from, to, ok := strings.Cut(t, "=")
				if !ok || from == "" {
					return fmt.Errorf("--template %q: give E2B_ID=SANDBOXD_TEMPLATE", t)
				}
				tm[from] = to
			}
			if v := os.Getenv(e2bListenEnv); v != "" && !cmd.Flags().Changed("listen") {
				listen = v
			}
			if network != "none" && network != "open" {
				return fmt.Errorf("--network %q: none or open", network)
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			log := slog.New(slog.NewTextHandler(os.Stderr, nil))
			c := a.client()
			defer c.Close()
			if h, err := c.HealthStatus(ctx); h == nil {
				return err
			}
			info, err := c.Info(ctx)
			if err != nil {
				return err
			}
			// E2B's own templates run code as E2B's user, at /home/user:
			// the gateway's template, unless mapped to another.
			var home []string
			for _, to := range tm {
				if t, err := c.Template(ctx, to); to != "" && err == nil && t.User != nil && *t.User == e2b.User {
					home = append(home, t.Ref)
				}
			}
			for _, id := range []string{"base", "code-interpreter-v1"} {
				if _, ok := tm[id]; ok {
					continue
				}
				ref, err := e2b.EnsureTemplate(ctx, c, e2b.BaseTemplate, log)
				if err != nil {
					return err
				}
				tm[id], home = ref, append(home, ref)
			}
			l, err := net.Listen("tcp", listen)
			if err != nil {
				return err
			}
			g, err := e2b.New(e2b.Options{
				Daemon: e2b.FromClient(c), Keys: ks, ID: id, Listen: l.Addr().String(), Hosts: hosts,
				Templates: tm, HomeTemplates: home, Network: network, MaxExecS: info.Max.TimeoutS, Log: log,
			})
			if err != nil {
				l.Close()
				return err
			}
			if ip := net.ParseIP(strings.Split(l.Addr().String(), ":")[0]); ip != nil && !ip.IsLoopback() {
				log.Warn("the gateway listens beyond this host: API keys and code travel unencrypted (put a TLS proxy in front)", "listen", l.Addr().String())
			}
			go g.Sweep(ctx)
			srv := &http.Server{Handler: g, ReadHeaderTimeout: 10 * time.Second}
			go func() {
				<-ctx.Done()
				sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				_ = srv.Shutdown(sctx)
			}()
			log.Info("E2B gateway serving", "listen", l.Addr().String(), "state_dir", e2bStateDir(*state))
			if err := srv.Serve(l); !errors.Is(err, http.ErrServerClosed) {
				return err
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&listen, "listen", e2bListenDflt, "the TCP address to serve on ($"+e2bListenEnv+" when set and the flag is not)")
	cmd.Flags().StringArrayVar(&hosts, "allow-host", nil, "a host name requests may carry besides the listen address and localhost (repeatable)")
	cmd.Flags().StringArrayVar(&templates, "template", nil, "map an E2B template id to a sandboxd template: E2B_ID=TEMPLATE (repeatable)")
	cmd.Flags().StringVar(&network, "network", "none", "the network of a sandbox whose create does not ask: none or open")
	return cmd
}

func newE2BKeyCmd(state *string) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "key",
		Short: "Create, list and revoke the gateway's API keys",
	}
	var name string
	var asJSON bool
	create := &cobra.Command{
		Use:   "create",
		Short: "Create an API key and print it (the only time it is shown)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ks, err := keys.Open(e2bStateDir(*state))
			if err != nil {
				return err
			}
			key, k, err := ks.Create(name)
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(os.Stdout, struct {
					keys.Key
					APIKey string `json:"api_key"`
				}{k, key})
			}
			fmt.Println(key)
			return nil
		},
	}
	create.Flags().StringVar(&name, "name", "", "a name for the key (for listings)")
	create.Flags().BoolVar(&asJSON, "json", false, "print the key and its id as JSON")
	var lsJSON bool
	ls := &cobra.Command{
		Use:     "ls",
		Aliases: []string{"list"},
		Short:   "List the API keys (their ids and names, never the keys)",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ks, err := keys.Open(e2bStateDir(*state))
			if err != nil {
				return err
			}
			list, err := ks.List()
			if err != nil {
				return err
			}
			if lsJSON {
				if list == nil {
					list = []keys.Key{}
				}
				return printJSON(os.Stdout, list)
			}
			w := newTable()
			fmt.Fprintln(w, "ID\tNAME\tCREATED")
			for _, k := range list {
				fmt.Fprintf(w, "%s\t%s\t%s\n", k.ID, k.Name, k.CreatedAt.Format(time.RFC3339))
			}
			return w.Flush()
		},
	}
	ls.Flags().BoolVar(&lsJSON, "json", false, "print the keys as JSON")
	rm := &cobra.Command{
		Use:     "rm ID|NAME...",
		Aliases: []string{"revoke"},
		Short:   "Revoke API keys: their sandboxes stay, out of the gateway's reach",
		Args:    cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ks, err := keys.Open(e2bStateDir(*state))
			if err != nil {
				return err
			}
			for _, a := range args {
				k, err := ks.Revoke(a)
				if err != nil {
					return err
				}
				fmt.Println(k.ID)
			}
			return nil
		},
	}
	cmd.AddCommand(create, ls, rm)
	return cmd
}
