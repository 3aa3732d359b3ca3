package main

import (
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/sandboxd/sandboxd/api"
)

func newHealthCmd(a *app) *cobra.Command {
	var asJSON, quiet bool
	cmd := &cobra.Command{
		Use:   "health",
		Short: "Check that the daemon is healthy, and say why not",
		Long: `Check the daemon's health: its database takes writes, a sandbox's cgroup
can be made, the warm pools start sandboxes, and its data dir has space
above data_dir_min_free_mb. Prints each check; exits 0 when all pass, 1
when one failed (the reasons on stderr; status "degraded" when only disk
space is short, "unhealthy" otherwise), 125 when the daemon does not
answer. For readiness probes (Kubernetes, load balancers): a daemon that
fails a check still serves its running sessions, so probe liveness with
"sandboxctl version" instead.`,
		Example: `  sandboxctl health
  sandboxctl health -q && echo ready`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			h, err := a.client().HealthStatus(cmd.Context())
			if h == nil {
				return err
			}
			switch {
			case asJSON:
				if err := printJSON(os.Stdout, h); err != nil {
					return err
				}
			case !quiet:
				for _, n := range slices.Sorted(maps.Keys(h.Checks)) {
					c := h.Checks[n]
					status := "ok"
					if !c.OK {
						status = "FAIL"
					}
					fmt.Printf("%-9s %-4s %s\n", n, status, c.Detail)
				}
				fmt.Println("status:", h.Status)
			}
			// Degraded (200: short of disk space, no new disk is made)
			// fails the check as unhealthy (503) does: a readiness probe
			// takes the node out of placement; it still serves its sessions.
			if err != nil || h.Status != api.HealthOK {
				if !asJSON {
					fmt.Fprintln(os.Stderr, "sandboxctl: "+h.Status+": "+strings.Join(h.Reasons, "; "))
				}
				return exitError{1}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the daemon's answer as JSON")
	cmd.Flags().BoolVarP(&quiet, "quiet", "q", false, "print nothing; the exit status says")
	return cmd
}
