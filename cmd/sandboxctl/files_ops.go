package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/sandboxd/sandboxd/api"
)

// sessionPath reads an ID:PATH argument, as cp names a session's file.
func sessionPath(arg string) (id, path string, err error) {
	id, path, ok := splitRemote(arg)
	if !ok || path == "" {
		return "", "", fmt.Errorf("bad argument %s: give ID:PATH, e.g. %s:data (a relative PATH is under /workspace)", api.Quote(arg), "ID")
	}
	return id, path, nil
}

// completeSessionPath completes ID:PATH: session ids first, then the
// entries of the folder PATH is in.
func (a *app) completeSessionPath(cmd *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	id, path, ok := strings.Cut(toComplete, ":")
	if !ok {
		ids, _ := a.completeSessions(cmd, nil, "")
		for i, s := range ids {
			name, desc, _ := strings.Cut(s, "\t")
			ids[i] = name + ":\t" + desc
		}
		return ids, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveNoSpace
	}
	dir := "/workspace"
	prefix := ""
	if i := strings.LastIndexByte(path, '/'); i >= 0 {
		dir, prefix = path[:i+1], path[:i+1]
	}
	_, list, err := a.client().GetFile(cmd.Context(), id, dir)
	if err != nil || list == nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var out []string
	for _, e := range list.Entries {
		name := id + ":" + prefix + e.Name
		if e.Type == "dir" {
			name += "/"
		}
		out = append(out, name)
	}
	return out, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveNoSpace
}

// printStat prints a file as ls -l would, or as JSON.
func printStat(w io.Writer, st *api.FileStat, asJSON bool) error {
	if asJSON {
		return printJSON(w, st)
	}
	line := fmt.Sprintf("%s %s %s %d %s %s", st.Permissions, st.Owner, st.Group, st.Size, st.ModifiedAt.Local().Format("2006-01-02 15:04:05"), st.Path)
	if st.SymlinkTarget != "" {
		line += " -> " + st.SymlinkTarget
	}
	// Metadata, one key a line below, as getfattr -d writes it.
	for _, k := range slices.Sorted(maps.Keys(st.Metadata)) {
		line += fmt.Sprintf("\n  %s=%q", k, st.Metadata[k])
	}
	_, err := fmt.Fprintln(w, line)
	return err
}

func newStatCmd(a *app) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "stat ID:PATH",
		Short: "Describe a file or folder of a session",
		Long: `Describe a file, folder or symlink of a session (a symlink itself, not
its target): type, size, permissions, owner and group as the sandbox names
them, and the time it last changed; then its metadata (user. extended
attributes), a key a line.`,
		Example: `  sandboxctl stat $id:data.csv
  sandboxctl stat $id:/tmp --json`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: a.completeSessionPath,
		RunE: func(cmd *cobra.Command, args []string) error {
			id, path, err := sessionPath(args[0])
			if err != nil {
				return err
			}
			st, err := a.client().StatFile(cmd.Context(), id, path)
			if err != nil {
				return err
			}
			return printStat(cmd.OutOrStdout(), st, asJSON)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the answer as JSON")
	return cmd
}

func newMkdirCmd(a *app) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "mkdir ID:PATH",
		Short: "Make a folder in a session, and the folders above it",
		Long: `Make a folder in a session and the folders above it, as mkdir -p does,
owned by the sandbox user. A folder already there is not an error.`,
		Example:           `  sandboxctl mkdir $id:results/2024`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: a.completeSessionPath,
		RunE: func(cmd *cobra.Command, args []string) error {
			id, path, err := sessionPath(args[0])
			if err != nil {
				return err
			}
			made, err := a.client().MakeFolder(cmd.Context(), id, path)
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(cmd.OutOrStdout(), made)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the answer as JSON (created says whether it was new)")
	return cmd
}

func newMvCmd(a *app) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "mv ID:FROM ID:TO",
		Short: "Rename a file or folder of a session",
		Long: `Rename a file, folder or symlink of a session, within /workspace or within
/tmp. It never replaces anything: if TO exists, mv fails. TO's folder must
exist. TO may be written as a bare PATH, in the same session.`,
		Example: `  sandboxctl mv $id:draft.txt $id:final.txt
  sandboxctl mv $id:out/a.png done/a.png`,
		Args:              cobra.ExactArgs(2),
		ValidArgsFunction: a.completeSessionPath,
		RunE: func(cmd *cobra.Command, args []string) error {
			id, from, err := sessionPath(args[0])
			if err != nil {
				return err
			}
			to := args[1]
			if toID, toPath, ok := splitRemote(to); ok {
				if toID != id {
					return errors.New("mv renames within one session: give the same ID on both sides")
				}
				to = toPath
			}
			st, err := a.client().MoveFile(cmd.Context(), id, from, to)
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(cmd.OutOrStdout(), st)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the file at its new path as JSON")
	return cmd
}

func newWatchCmd(a *app) *cobra.Command {
	var asJSON, recursive bool
	cmd := &cobra.Command{
		Use:   "watch ID:PATH",
		Short: "Print what changes in a folder of a session, as it happens",
		Long: `Print what changes in a folder of a session as it happens, one line an
event: create, write, remove, rename (the old path; the new one comes as a
create), chmod; overflow if the kernel dropped events. It ends with Ctrl-C,
when the session stops, or when the folder goes. The session must be running
(a paused one is resumed).`,
		Example: `  sandboxctl watch $id:. --recursive
  sandboxctl watch $id:/tmp --json`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: a.completeSessionPath,
		RunE: func(cmd *cobra.Command, args []string) error {
			id, path, err := sessionPath(args[0])
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			out := cmd.OutOrStdout()
			enc := json.NewEncoder(out)
			err = a.client().WatchFiles(ctx, id, path, recursive, nil, func(ev api.FileEvent) error {
				if asJSON {
					return enc.Encode(ev)
				}
				_, err := fmt.Fprintf(out, "%-8s %s\n", ev.Type, ev.Path)
				return err
			})
			if errors.Is(err, context.Canceled) && ctx.Err() != nil {
				return nil // Ctrl-C: the user is done watching
			}
			return err
		},
	}
	cmd.Flags().BoolVarP(&recursive, "recursive", "r", false, "watch the folders below it too")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print each event as one line of JSON, as the API sends it")
	return cmd
}
