package main

import (
	"github.com/spf13/cobra"

	"github.com/sandboxd/sandboxd/api"
)

// newPipCmd installs Python packages into a session.
func newPipCmd(a *app) *cobra.Command {
	var f codeFlags
	var index string
	cmd := &cobra.Command{
		Use:   "pip ID PACKAGE...",
		Short: "Install Python packages into a session (kept in /workspace across stop and start)",
		Long: `pip installs packages into the session's /workspace/.local, where its
interpreter finds them at once and after a restart. The index (the daemon's
[network] package_index_url, or --index-url) is opened to the session for
the length of the install when its own network policy does not reach it.
pip's output streams as it runs; the exit code is pip's.`,
		Example: `  sandboxctl pip 3f2a numpy==1.26.4 'pandas>=2,<3'
  sandboxctl pip 3f2a --index-url https://mirror.example/simple requests`,
		Args:              cobra.MinimumNArgs(2),
		ValidArgsFunction: a.completeSessionFirst,
		RunE: func(cmd *cobra.Command, args []string) error {
			var on func(api.Event)
			var p *streamPrinter
			if !f.asJSON {
				p = &streamPrinter{}
				on = p.event
			}
			e, err := a.client().InstallPackages(cmd.Context(), args[0], &api.PackagesRequest{Packages: args[1:], IndexURL: index}, on)
			if err != nil {
				return err
			}
			return f.show(e, p)
		},
	}
	cmd.Flags().StringVar(&index, "index-url", "", "the package index (default: the daemon's package_index_url)")
	cmd.Flags().BoolVar(&f.asJSON, "json", false, "print the Execution as JSON")
	return cmd
}
