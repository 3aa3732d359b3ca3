package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/sandboxd/sandboxd/api"
)

// newContextCmd manages a session's code contexts: interpreters of their
// own in one sandbox, which exec --context runs code in.
func newContextCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "context",
		Short: "Manage a session's code contexts (interpreters of their own)",
		Long: `A code context is a Python (or JavaScript: node's) interpreter of its own in
a session's sandbox: its globals are its own, it starts in its folder, and the
session's files, processes and limits are shared. Run code in one with
exec --context ID (and --js for a javascript one).
Every session has the context "default", which exec uses without --context.`,
		Example: `  c=$(sandboxctl context create 3f2a --cwd data)
  try=$(sandboxctl context create 3f2a --from default)   # explore from here; default keeps its state
  sandboxctl exec 3f2a --context $c -c 'import os; os.getcwd()'
  sandboxctl context ls 3f2a
  sandboxctl context restart 3f2a $c
  sandboxctl context rm 3f2a $c`,
	}
	cmd.AddCommand(newContextCreateCmd(a), newContextLsCmd(a), newContextRmCmd(a), newContextRestartCmd(a))
	return cmd
}

func newContextCreateCmd(a *app) *cobra.Command {
	var req api.CreateContextRequest
	var asJSON bool
	cmd := &cobra.Command{
		Use:               "create SESSION",
		Short:             "Make a code context and print its id",
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: a.completeSessions,
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.client().CreateContext(cmd.Context(), args[0], req)
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(os.Stdout, c)
			}
			fmt.Println(c.ID)
			return nil
		},
	}
	cmd.Flags().StringVar(&req.Language, "language", "", `"python" (the default) or "javascript" (node, the template's): an interpreter; "shell": a working folder for --shell executions`)
	cmd.Flags().StringVarP(&req.Cwd, "cwd", "w", "", "its folder (default /workspace, or --from's)")
	cmd.Flags().StringVar(&req.From, "from", "", "copy this Python context's interpreter: its variables, imports and folder (default: an empty one)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	_ = cmd.RegisterFlagCompletionFunc("from", func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		if len(args) == 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return a.completeContexts(cmd, args[:1], toComplete)
	})
	_ = cmd.RegisterFlagCompletionFunc("language", cobra.FixedCompletions([]string{api.LanguagePython, api.LanguageJavaScript, api.LanguageShell}, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

func newContextLsCmd(a *app) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:               "ls SESSION",
		Aliases:           []string{"list"},
		Short:             "List a session's code contexts",
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: a.completeSessions,
		RunE: func(cmd *cobra.Command, args []string) error {
			cs, err := a.client().Contexts(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(os.Stdout, api.ContextList{Contexts: cs})
			}
			tw := newTable()
			fmt.Fprintln(tw, "ID\tLANGUAGE\tCWD\tCREATED")
			for _, c := range cs {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", c.ID, c.Language, c.Cwd, ago(c.CreatedAt))
			}
			return tw.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func newContextRmCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:               "rm SESSION CONTEXT...",
		Short:             "Delete code contexts: their interpreters stop, their state is gone",
		Args:              cobra.MinimumNArgs(2),
		ValidArgsFunction: a.completeContexts,
		RunE: func(cmd *cobra.Command, args []string) error {
			for _, cid := range args[1:] {
				if err := a.client().DeleteContext(cmd.Context(), args[0], cid); err != nil {
					return err
				}
			}
			return nil
		},
	}
}

func newContextRestartCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:               "restart SESSION CONTEXT",
		Short:             "Start a code context's interpreter afresh (default: the session's first)",
		Args:              cobra.ExactArgs(2),
		ValidArgsFunction: a.completeContexts,
		RunE: func(cmd *cobra.Command, args []string) error {
			_, err := a.client().RestartContext(cmd.Context(), args[0], args[1])
			return err
		},
	}
}

// completeContexts completes a session, then its contexts.
func (a *app) completeContexts(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	if len(args) == 0 {
		return a.completeSessions(cmd, args, toComplete)
	}
	cs, err := a.client().Contexts(cmd.Context(), args[0])
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var ids []string
	for _, c := range cs {
		ids = append(ids, c.ID+"\t"+c.Language+" in "+c.Cwd)
	}
	return ids, cobra.ShellCompDirectiveNoFileComp
}
