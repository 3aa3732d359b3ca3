package main

import (
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/sandboxd/sandboxd/api"
)

func newNodeCmd(a *app) *cobra.Command {
	var asJSON bool
	var format string
	cmd := &cobra.Command{
		Use:   "node",
		Short: "Show the daemon as a scheduler sees it: id, labels, capacity, allocation, pools",
		Long: `Show the daemon as a scheduler (Nomad, Kubernetes, Ray) sees it: its node id,
state, labels ([node] labels in the config), capacity (host memory, CPUs,
max_sessions), what running sessions hold of it by their limits, sessions by
status, warm pools, templates and the runtimes sessions can ask for.

Sessions are counted as "info" counts them: root sees every session, another
user only their own.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			n, err := a.client().Node(cmd.Context())
			if err != nil {
				return err
			}
			if format != "" {
				return printFormatted(os.Stdout, format, []*api.Node{n})
			}
			if asJSON {
				return printJSON(os.Stdout, n)
			}
			fmt.Printf("Node id:         %s\n", n.NodeID)
			fmt.Printf("Hostname:        %s\n", n.Hostname)
			fmt.Printf("Server version:  %s\n", n.Version)
			fmt.Printf("State:           %s\n", n.State)
			fmt.Printf("Labels:          %s\n", orNone(labelList(n.Labels)))
			c, al := n.Capacity, n.Allocated
			fmt.Printf("Capacity:        memory %dMB, cpus %g, sessions %d\n", c.MemoryMB, c.CPUs, c.Sessions)
			fmt.Printf("Allocated:       memory %dMB, cpus %g, sessions %d\n", al.MemoryMB, al.CPUs, al.Sessions)
			s := n.SessionsByStatus
			fmt.Printf("Sessions:        %d running, %d paused, %d stopped, %d failed\n", s.Running, s.Paused, s.Stopped, s.Failed)
			fmt.Printf("Warm pools:      %s\n", orNone(nodePools(n.Pools)))
			fmt.Printf("Templates:       %s\n", orNone(strings.Join(n.Templates, ", ")))
			fmt.Printf("Runtimes:        %s\n", orNone(strings.Join(n.Runtimes, ", ")))
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	cmd.Flags().StringVar(&format, "format", "", formatHelp)
	cmd.AddCommand(newNodeDrainCmd(a))
	return cmd
}

func newNodeDrainCmd(a *app) *cobra.Command {
	var off, wait bool
	var interval time.Duration
	cmd := &cobra.Command{
		Use:   "drain",
		Short: "Stop taking new sessions (--off: take them again); running sessions go on",
		Long: `Drain the node before maintenance: new creates and one-shot runs answer 503
with Retry-After, so that a scheduler places new work elsewhere, while the
sessions here run on. The state outlives a restart of the daemon. Root only.

--wait returns once no session runs (each stopped, deleted or paused).`,
		Example: `  sandboxctl node drain --wait   # then upgrade or reboot the host
  sandboxctl node drain --off`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if off && wait {
				return errors.New("--wait waits for a drain: not with --off")
			}
			c := a.client()
			n, err := c.Drain(cmd.Context(), !off)
			if err != nil {
				return err
			}
			fmt.Printf("Node %s is %s\n", n.NodeID, n.State)
			for wait && n.SessionsByStatus.Running > 0 {
				fmt.Fprintf(os.Stderr, "waiting for %d running session(s)\n", n.SessionsByStatus.Running)
				select {
				case <-cmd.Context().Done():
					return cmd.Context().Err()
				case <-time.After(interval):
				}
				if n, err = c.Node(cmd.Context()); err != nil {
					return err
				}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&off, "off", false, "take new sessions again")
	cmd.Flags().BoolVar(&wait, "wait", false, "return once no session runs")
	cmd.Flags().DurationVar(&interval, "interval", 2*time.Second, "how often --wait looks")
	return cmd
}

// labelList is labels as k=v, in key order.
func labelList(labels map[string]string) string {
	parts := make([]string, 0, len(labels))
	for k, v := range labels {
		parts = append(parts, k+"="+v)
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}

// nodePools is each template's pool as ready/target, in name order, for
// the templates that keep one.
func nodePools(pools map[string]api.NodePool) string {
	var parts []string
	for name, p := range pools {
		if p.Target > 0 || p.Ready > 0 {
			parts = append(parts, fmt.Sprintf("%s %d/%d ready", name, p.Ready, p.Target))
		}
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}

// orNone stands in for an empty list.
func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
