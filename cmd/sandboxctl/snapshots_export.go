package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"
	"golang.org/x/term"
)

// A snapshot moves between nodes as one tar stream: export writes it to
// a file (or stdout), import reads it back on another node.

func newSnapshotExportCmd(a *app) *cobra.Command {
	var out string
	cmd := &cobra.Command{
		Use:               "export ID",
		Short:             "Write a snapshot as one portable tar file, for import on another node",
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: a.completeSnapshots,
		Example: `  sandboxctl snapshot export warm -o warm.tar
  sandboxctl snapshot export warm | ssh node2 sandboxctl snapshot import -`,
		RunE: func(cmd *cobra.Command, args []string) (retErr error) {
			var w io.Writer = cmd.OutOrStdout()
			if out == "" || out == "-" {
				if f, ok := w.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
					return errors.New("refusing to write a tar stream to a terminal: give -o FILE or redirect stdout")
				}
			}
			r, err := a.client().ExportSnapshot(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			defer r.Close()
			if out != "" && out != "-" {
				f, err := os.OpenFile(out, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
				if err != nil {
					return fmt.Errorf("%s: %w", out, errors.Unwrap(err))
				}
				defer func() {
					if cerr := f.Close(); retErr == nil {
						retErr = cerr
					}
					if retErr != nil {
						os.Remove(out)
					}
				}()
				w = f
			}
			if _, err := io.Copy(w, r); err != nil {
				return fmt.Errorf("the export was cut short: %w", err)
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&out, "output", "o", "", "write to FILE (new) instead of stdout")
	return cmd
}

func newSnapshotImportCmd(a *app) *cobra.Command {
	var name string
	cmd := &cobra.Command{
		Use:   "import FILE|-",
		Short: "Make a snapshot of yours from an exported one and print its id",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var r io.Reader = cmd.InOrStdin()
			if args[0] != "-" {
				f, err := os.Open(args[0])
				if err != nil {
					return fmt.Errorf("%s: %w", args[0], errors.Unwrap(err))
				}
				defer f.Close()
				r = f
			}
			s, err := a.client().ImportSnapshot(cmd.Context(), name, r)
			if err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), s.ID)
			return nil
		},
	}
	cmd.Flags().StringVar(&name, "name", "", "name it (default: the name it was exported with)")
	return cmd
}
