package main

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/sandboxd/sandboxd/api"
)

// newSnapshotCmd manages snapshots: a session's files and settings kept
// beyond it, which create --snapshot makes sessions from.
func newSnapshotCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "snapshot",
		Short: "Manage snapshots (a session's files and settings, to make sessions from)",
		Long: `A snapshot keeps a session's files (/workspace) and settings (template,
limits, env, network policy, labels, runtime) beyond it. create --snapshot
makes sessions from it, as many times as wanted; the session it was taken
from runs on (paused only while its state is read).

Under runsc (a gVisor from 2025 on) a running session's snapshot keeps its
memory too (MEMORY yes): sessions made from it, and forks, go on with the
interpreter's variables and the processes that ran. Under runc, or of a
stopped session, it keeps files only: the first execution of a session
made from it starts a fresh interpreter (its answer says state_reset).
A process started beside the interpreter (exec -d, a terminal) must end
before a memory snapshot. export writes files and settings only.`,
		Example: `  sandboxctl snapshot create $s --name warm
  sandboxctl create --snapshot warm --count 4
  sandboxctl snapshot ls
  sandboxctl snapshot export warm -o warm.tar   # then, on another node:
  sandboxctl snapshot import warm.tar
  sandboxctl snapshot rm warm`,
	}
	cmd.AddCommand(newSnapshotCreateCmd(a), newSnapshotLsCmd(a), newSnapshotInspectCmd(a), newSnapshotRmCmd(a),
		newSnapshotExportCmd(a), newSnapshotImportCmd(a))
	return cmd
}

func newSnapshotCreateCmd(a *app) *cobra.Command {
	var name string
	var asJSON bool
	cmd := &cobra.Command{
		Use:               "create SESSION",
		Short:             "Snapshot a session and print the snapshot's id",
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: a.completeSessionFirst,
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := a.client().CreateSnapshot(cmd.Context(), args[0], name)
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(cmd.OutOrStdout(), s)
			}
			fmt.Fprintln(cmd.OutOrStdout(), s.ID)
			return nil
		},
	}
	cmd.Flags().StringVar(&name, "name", "", "name the snapshot (unique among yours): usable wherever its id is")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the whole snapshot as JSON")
	return cmd
}

func newSnapshotLsCmd(a *app) *cobra.Command {
	var asJSON, quiet bool
	cmd := &cobra.Command{
		Use:     "ls",
		Aliases: []string{"list"},
		Short:   "List snapshots",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ss, err := a.client().ListSnapshots(cmd.Context())
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			switch {
			case asJSON:
				if ss == nil {
					ss = []api.Snapshot{}
				}
				return printJSON(out, api.SnapshotList{Snapshots: ss})
			case quiet:
				for _, s := range ss {
					fmt.Fprintln(out, s.ID)
				}
				return nil
			}
			return printSnapshots(out, ss)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	cmd.Flags().BoolVarP(&quiet, "quiet", "q", false, "print ids only")
	return cmd
}

// printSnapshots writes snapshot ls's table.
func printSnapshots(w io.Writer, ss []api.Snapshot) error {
	// newTable writes to os.Stdout; this one to the command's output, so
	// that a test reads it.
	tw := tabwriter.NewWriter(w, 0, 4, 3, ' ', 0)
	fmt.Fprintln(tw, "ID\tNAME\tSESSION\tOWNER\tTEMPLATE\tRUNTIME\tMEMORY\tSIZE\tCREATED")
	for _, s := range ss {
		mem := "no"
		if s.Memory {
			mem = "yes"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\t%s\t%d MB\t%s\n", s.ID, orDash(s.Name), s.SessionID, s.OwnerUID, s.Template, s.Runtime, mem, s.SizeMB, ago(s.CreatedAt))
	}
	return tw.Flush()
}

func newSnapshotInspectCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:               "inspect ID",
		Short:             "Print a snapshot as JSON",
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: a.completeSnapshots,
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := a.client().GetSnapshot(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			return printJSON(cmd.OutOrStdout(), s)
		},
	}
}

func newSnapshotRmCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:               "rm ID...",
		Short:             "Delete snapshots and their files (sessions made from them keep theirs)",
		Args:              cobra.MinimumNArgs(1),
		ValidArgsFunction: a.completeSnapshots,
		RunE: func(cmd *cobra.Command, args []string) error {
			for _, ref := range args {
				if err := a.client().DeleteSnapshot(cmd.Context(), ref); err != nil {
					return err
				}
			}
			return nil
		},
	}
}

// newForkCmd makes sessions that start where a session is now.
func newForkCmd(a *app) *cobra.Command {
	var count int
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "fork SESSION",
		Short: "Make sessions with a session's files and settings as they are now, and print their ids",
		Long: `Make sessions that start with a session's files and settings as they are
now, and print their ids, one a line. The session runs on, frozen only while
its files are read. The forks mount its volumes too. Their interpreters start
afresh (the first execution says state_reset): variables are not copied.
All the sessions are made, or none.`,
		Example: `  sandboxctl fork $s --count 3
  for f in $(sandboxctl fork $s --count 3); do sandboxctl exec $f -c 'try_one()'; done`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: a.completeSessionFirst,
		RunE: func(cmd *cobra.Command, args []string) error {
			ss, err := a.client().Fork(cmd.Context(), args[0], count)
			if err != nil {
				return err
			}
			return printSessions(cmd.OutOrStdout(), ss, asJSON)
		},
	}
	cmd.Flags().IntVar(&count, "count", 1, fmt.Sprintf("how many sessions to make (1 to %d)", api.MaxCount))
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the sessions as JSON")
	_ = cmd.RegisterFlagCompletionFunc("count", cobra.NoFileCompletions)
	return cmd
}

// printSessions writes the sessions a fork or a create with a count made:
// their ids one a line, or the list as JSON.
func printSessions(w io.Writer, ss []api.Session, asJSON bool) error {
	if asJSON {
		if ss == nil {
			ss = []api.Session{}
		}
		return printJSON(w, ss)
	}
	for _, s := range ss {
		fmt.Fprintln(w, s.ID)
	}
	return nil
}

// completeSnapshots completes the caller's snapshots: their ids, and
// their names where they have one.
func (a *app) completeSnapshots(cmd *cobra.Command, _ []string, _ string) ([]string, cobra.ShellCompDirective) {
	ss, err := a.client().ListSnapshots(cmd.Context())
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var refs []string
	for _, s := range ss {
		refs = append(refs, fmt.Sprintf("%s\tof %s, %d MB", s.ID, s.SessionID, s.SizeMB))
		if s.Name != "" {
			refs = append(refs, fmt.Sprintf("%s\t%s, of %s", s.Name, s.ID, s.SessionID))
		}
	}
	return refs, cobra.ShellCompDirectiveNoFileComp
}
