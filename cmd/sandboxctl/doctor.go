package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/sandboxd/sandboxd/client"
	"github.com/sandboxd/sandboxd/internal/hostcheck"
)

func newDoctorCmd(a *app) *cobra.Command {
	var asJSON bool
	var dataDir, lxcfsDir string
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: "Check this host for what sandboxd needs and say what is missing",
		Long: `doctor checks the kernel, cgroups and their controllers, seccomp, openat2,
user namespaces, the python3 of the default template, gVisor, the daemon's
socket, the disk where workspaces live, lxcfs (sandboxes' own /proc view) and
networking (netlink, nftables, forwarding). It exits 1 if anything fails.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			socket := client.New(a.socket).Socket()
			checks := hostcheck.Default(socket, dataDir)
			checks.LXCFS = lxcfsDir
			results := checks.Run()
			// The daemon knows its floor; a daemon too old to say, or not
			// running (the socket check says so), adds nothing.
			ctx, cancel := context.WithTimeout(cmd.Context(), 5*time.Second)
			if h, err := a.client().HealthStatus(ctx); err == nil && h.DataDir != nil {
				results = append(results, hostcheck.DataDirFloor(h.DataDir.FreeMB, h.DataDir.MinFreeMB, h.DataDir.OK))
			}
			cancel()
			if asJSON {
				if err := printJSON(os.Stdout, results); err != nil {
					return err
				}
			} else {
				t := newTable()
				fmt.Fprintln(t, "CHECK\tSTATUS\tDETAIL")
				for _, r := range results {
					fmt.Fprintf(t, "%s\t%s\t%s\n", r.Name, r.Status, r.Detail)
				}
				if err := t.Flush(); err != nil {
					return err
				}
			}
			if hostcheck.Failed(results) {
				return exitError{1}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	cmd.Flags().StringVar(&dataDir, "data-dir", "/var/lib/sandboxd", "the daemon's data dir, for the disk check")
	cmd.Flags().StringVar(&lxcfsDir, "lxcfs-dir", "/var/lib/lxcfs", "the daemon's lxcfs_dir (\"\": off)")
	return cmd
}
