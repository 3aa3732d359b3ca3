package main

import (
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/sandboxd/sandboxd/client/mcpserver"
	"github.com/sandboxd/sandboxd/internal/version"
)

// newMCPCmd serves sandboxd's tools to an MCP client on stdio.
func newMCPCmd(a *app) *cobra.Command {
	var f sessionFlags
	var keep bool
	var checkpoints int
	cmd := &cobra.Command{
		Use:   "mcp [flags]",
		Short: "Serve sandboxd to an AI agent as a Model Context Protocol server on stdio",
		Long: `mcp is an MCP server on stdin and stdout, for an MCP client (Claude Desktop,
Claude Code, Cursor, VS Code, an agent framework) to start. Its tools:

  run_python        run code in a session's persistent interpreter (figures come back as images)
  run_shell         run a shell command
  write_file        write a file (text or base64)
  read_file         read a file (text, image, or base64), or list a folder
  install_packages  pip install into the session
  create_session    make a session (limits, network, labels, deadline)
  list_sessions     the sessions you may use
  delete_session    delete one
  start_execution   start code without waiting (long work); get_execution,
                    list_executions and interrupt follow it
  start_process     start a command in the background (a server), its input
                    given or kept open; list_processes, process_logs,
                    write_stdin and kill_process follow it
  pause_session     freeze a session, memory kept; resume_session
  undo              take a session back over its last executions (one made
                    with checkpoints: --checkpoints for the server's own)
  snapshot_session, fork_session, list_snapshots, list_volumes, contexts

A tool call that leaves out session_id uses the server's own session, made
on first use with the flags given here (and said in that call's result).
Every session the server made is deleted when the client closes it, unless
--keep. Logs go to stderr; stdout is the protocol's.

See docs/mcp.md for client configurations.`,
		Example: `  sandboxctl mcp
  sandboxctl mcp --memory 1G --network allowlist --allow pypi.org
  claude mcp add sandboxd -- sandboxctl mcp`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			req, err := f.request(cmd.Flags())
			if err != nil {
				return err
			}
			req.Checkpoints = checkpoints
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			logger := slog.New(slog.NewTextHandler(os.Stderr, nil))
			slog.SetDefault(logger)
			c := a.client()
			defer c.Close()
			// The daemon is asked first: a client that starts the server
			// learns at once that it cannot work, not at its first call.
			if h, err := c.HealthStatus(ctx); h == nil {
				return err // an unhealthy daemon still serves what it can
			}
			s := mcpserver.New(c, mcpserver.Options{Create: *req, Keep: keep, Version: version.Version})
			err = s.Run(ctx, &mcp.StdioTransport{})
			if ctx.Err() != nil {
				return nil // interrupted: the sessions are cleaned up
			}
			return err
		},
	}
	f.addTo(cmd, a)
	cmd.Flags().BoolVar(&keep, "keep", false, "leave the sessions this server made when it ends")
	cmd.Flags().IntVar(&checkpoints, "checkpoints", 0, "its own session keeps the state before each of its last N executions (0 to 16), for the undo tool")
	return cmd
}
