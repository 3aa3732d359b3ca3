package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/client"
	"github.com/sandboxd/sandboxd/internal/hostcheck"
	"github.com/sandboxd/sandboxd/isolation/lxcfs"
)

func newDoctorCmd(a *app) *cobra.Command {
	var asJSON bool
	var dataDir, runDir, lxcfsDir, runscPath, runscPlatform, e2bListen string
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: "Check this host for what sandboxd needs and say what is missing",
		Long: `doctor checks the kernel, cgroups and their controllers, seccomp, openat2,
user namespaces, the python3 of the default template, gVisor (runsc runs a
sandbox on the daemon's platform; its memory gets the host's huge pages), the
runtimes the daemon found, the daemon's socket, that sandboxes can reach its
folders, the disk where workspaces live, lxcfs (sandboxes' own /proc view),
networking (netlink, nftables, forwarding) and the optional E2B gateway
(sandboxd-e2b.service: installed, enabled, answering). It exits 1 if
anything fails.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			socket := client.New(a.socket).Socket()
			// A running daemon says which runsc platform it uses, which
			// runtimes it found usable, and its folders (unless the flags
			// name others).
			ctx, cancel := context.WithTimeout(cmd.Context(), 5*time.Second)
			defer cancel()
			info, infoErr := a.client().Info(ctx)
			if infoErr == nil {
				if info.DataDir != "" && !cmd.Flags().Changed("data-dir") {
					dataDir = info.DataDir
				}
				if info.RunDir != "" && !cmd.Flags().Changed("run-dir") {
					runDir = info.RunDir
				}
			}
			checks := hostcheck.Default(socket, dataDir, runDir, lxcfs.Binary(), hostProbes())
			checks.LXCFS = lxcfsDir
			checks.RunscPath = runscPath
			checks.RunscPlatform = runscPlatform
			if infoErr == nil && runscPlatform == "" {
				for _, rt := range info.Runtimes {
					if rt.Name == api.RuntimeRunsc {
						checks.RunscPlatform = rt.Platform
					}
				}
			}
			results := checks.Run()
			if infoErr == nil {
				results = append(results, hostcheck.DaemonRuntimes(info), hostcheck.DaemonProcView(info.ProcView))
			}
			// The daemon knows its floor; a daemon too old to say, or not
			// running (the socket check says so), adds nothing.
			// An unhealthy daemon still answers its health (503): its
			// reasons are doctor's too.
			if h, _ := a.client().HealthStatus(ctx); h != nil {
				if h.DataDir != nil {
					results = append(results, hostcheck.DataDirFloor(h.DataDir.FreeMB, h.DataDir.MinFreeMB, h.DataDir.OK))
				}
				if len(h.Reasons) > 0 {
					results = append(results, hostcheck.Result{Name: "daemon health", Status: hostcheck.Fail, Detail: strings.Join(h.Reasons, "; ")})
				}
			}
			results = append(results, e2bGateway(cmd.Context(), hostE2BProbes(), e2bListen))
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
	cmd.Flags().StringVar(&dataDir, "data-dir", "/var/lib/sandboxd", "the daemon's data dir, for the disk and folder checks (default: the running daemon's, else this)")
	cmd.Flags().StringVar(&runDir, "run-dir", "/run/sandboxd", "the daemon's run dir, for the folder check (default: the running daemon's, else this)")
	cmd.Flags().StringVar(&runscPath, "runsc", "", "the daemon's [runsc] path (\"\": runsc on PATH)")
	cmd.Flags().StringVar(&runscPlatform, "runsc-platform", "", "the runsc platform to check (\"\": the running daemon's, else ptrace)")
	cmd.Flags().StringVar(&e2bListen, "e2b-listen", "", "an E2B gateway's address to ask (default $"+e2bListenEnv+", else sandboxd-e2b.service's when it runs)")
	cmd.Flags().StringVar(&lxcfsDir, "lxcfs-dir", "/var/lib/lxcfs", "the daemon's lxcfs_dir (\"\": off)")
	return cmd
}
