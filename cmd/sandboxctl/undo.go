package main

import (
	"fmt"

	"github.com/spf13/cobra"
)

// newUndoCmd takes a session back to before its last executions.
func newUndoCmd(a *app) *cobra.Command {
	var steps int
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "undo SESSION",
		Short: "Take a session back to before its last executions (a session made with --checkpoints)",
		Long: `Take a session back to before its last executions: each interpreter they
ran in takes back the copy parked before them (its variables, imports and
objects as they were), and /workspace returns to what it held then. The
session must have been made with --checkpoints N: it keeps the last N
executions' states. Not rolled back: what the code sent over the network,
and what other processes did.`,
		Example: `  s=$(sandboxctl create --checkpoints 5)
  sandboxctl exec $s -c 'df = load()'
  sandboxctl exec $s -c 'del df'
  sandboxctl undo $s             # df is back
  sandboxctl undo $s --steps 2`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: a.completeSessionFirst,
		RunE: func(cmd *cobra.Command, args []string) error {
			n, err := a.client().Undo(cmd.Context(), args[0], steps)
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(cmd.OutOrStdout(), map[string]int{"undone": n})
			}
			if n == 1 {
				fmt.Fprintln(cmd.OutOrStdout(), "went back 1 execution")
			} else {
				fmt.Fprintf(cmd.OutOrStdout(), "went back %d executions\n", n)
			}
			return nil
		},
	}
	cmd.Flags().IntVar(&steps, "steps", 1, "how many executions to go back")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	_ = cmd.RegisterFlagCompletionFunc("steps", cobra.NoFileCompletions)
	return cmd
}
