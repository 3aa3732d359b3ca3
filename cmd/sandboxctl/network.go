package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/sandboxd/sandboxd/api"
)

// newNetworkCmd shows or changes a session's network policy.
func newNetworkCmd(a *app) *cobra.Command {
	var allow []string
	var caps capFlags
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "network ID [none | allowlist | open]",
		Short: "Show a session's network policy, or change it at once",
		Long: `Without a mode, print the session's network policy. With one, change it
at once: connections to what the new policy does not allow are cut.
A session created with network "none" gets a new policy at its next start.`,
		Example: `  sandboxctl network 3f2a
  sandboxctl network 3f2a allowlist --allow pypi.org --allow files.pythonhosted.org:443
  sandboxctl network 3f2a none`,
		Args: cobra.RangeArgs(1, 2),
		ValidArgsFunction: func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
			if len(args) == 0 {
				return a.completeSessions(cmd, args, toComplete)
			}
			return completeNetwork(cmd, args, toComplete)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			var s *api.Session
			var err error
			if len(args) == 1 {
				if len(allow) > 0 {
					return fmt.Errorf("--allow needs a mode: sandboxctl network %s allowlist --allow ...", args[0])
				}
				s, err = a.client().GetSession(cmd.Context(), args[0])
			} else {
				egress, conns := caps.values(cmd.Flags())
				s, err = a.client().SetNetwork(cmd.Context(), args[0], &api.NetworkRequest{Network: args[1], Allow: allow, EgressKbps: egress, MaxConnections: conns})
			}
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(os.Stdout, map[string]any{"id": s.ID, "network": s.Network, "allow": s.Allow,
					"egress_kbps": s.EgressKbps, "max_connections": s.MaxConnections})
			}
			fmt.Println(s.Network)
			if len(s.Allow) > 0 {
				fmt.Println("allow: " + strings.Join(s.Allow, ", "))
			}
			if s.EgressKbps > 0 {
				fmt.Printf("egress: %d kbit/s\n", s.EgressKbps)
			}
			if s.MaxConnections > 0 {
				fmt.Printf("max connections: %d\n", s.MaxConnections)
			}
			return nil
		},
	}
	cmd.Flags().StringSliceVar(&allow, "allow", nil, "what the sandbox may reach: host, *.domain or CIDR, each optionally :port (repeatable or comma-separated)")
	caps.register(cmd.Flags())
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}
