package main

import (
	"context"
	_ "embed"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/sandboxd/sandboxd/api"
)

// mcpBridge is the sandbox side of mcp-proxy (see the file).
//
//go:embed mcpproxy_bridge.py
var mcpBridge string

// mcpBridgeProtocol is the Upgrade token the bridge accepts.
const mcpBridgeProtocol = "sandboxd-stdio"

// newMCPProxyCmd runs an MCP server inside a session with its stdio
// joined to sandboxctl's, so an MCP client starts a sandboxed server as it
// would start a local one.
func newMCPProxyCmd(a *app) *cobra.Command {
	var timeout float64
	cmd := &cobra.Command{
		Use:   "mcp-proxy ID -- COMMAND [ARG...]",
		Short: "Run an MCP server (or any stdio program) inside a session, joined to this process's stdin and stdout",
		Long: `mcp-proxy runs COMMAND inside the session and joins its stdin and stdout to
sandboxctl's: an MCP client configured to start "sandboxctl mcp-proxy ID --
COMMAND" talks to a server that runs sandboxed (no network unless the session
has one, its limits, its files), not on the host. COMMAND's stderr comes out on
sandboxctl's stderr. When the client closes stdin, COMMAND's stdin closes and
its output keeps coming until it ends; sandboxctl exits with COMMAND's status.
When sandboxctl is stopped, a COMMAND that does not end within seconds is
stopped too.

The session needs python3 (every template built on the default one has it):
a small bridge in the session serves COMMAND's stdio on a loopback port, which
the daemon's port proxy reaches.`,
		Example: `  id=$(sandboxctl create --label role=mcp)
  sandboxctl cp server.py $id:server.py
  sandboxctl mcp-proxy $id -- python3 server.py
  claude mcp add untrusted -- sandboxctl mcp-proxy $id -- npx some-mcp-server`,
		Args:              cobra.MinimumNArgs(2),
		ValidArgsFunction: a.completeSessionFirst,
		RunE: func(cmd *cobra.Command, args []string) error {
			if dash := cmd.ArgsLenAtDash(); dash != 1 {
				return errors.New("write the command after --: sandboxctl mcp-proxy ID -- COMMAND [ARG...]")
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			code, err := a.mcpProxy(ctx, args[0], args[1:], timeout, os.Stdin, os.Stdout, os.Stderr)
			if err != nil {
				return err
			}
			if code != 0 {
				return exitError{code}
			}
			return nil
		},
	}
	cmd.Flags().Float64Var(&timeout, "timeout", 0, "seconds COMMAND may run (default: the daemon's longest, see sandboxctl info)")
	return cmd
}

// mcpProxy runs argv in session id with its stdio joined to in and out
// until it ends, and returns its exit status.
func (a *app) mcpProxy(ctx context.Context, id string, argv []string, timeout float64, in io.Reader, out, errOut io.Writer) (int, error) {
	c := a.client()
	defer c.Close()
	if _, err := c.GetSession(ctx, id); err != nil {
		return 0, err
	}
	if timeout <= 0 {
		info, err := c.Info(ctx)
		if err != nil {
			return 0, err
		}
		timeout = float64(info.Max.TimeoutS)
	}
	argvJSON, err := json.Marshal(argv)
	if err != nil {
		return 0, err
	}
	req := &api.ExecRequest{
		Language: api.LanguageShell,
		Code:     `exec python3 -c "$SANDBOXD_MCP_BRIDGE"`,
		Env:      map[string]string{"SANDBOXD_MCP_BRIDGE": mcpBridge, "SANDBOXD_MCP_ARGV": string(argvJSON)},
		TimeoutS: &timeout,
	}

	// The bridge's first line of stdout is its port; its stderr (and
	// COMMAND's) is the caller's.
	port := make(chan int, 1)
	var (
		line   strings.Builder
		listed bool
	)
	type result struct {
		ex  *api.Execution
		err error
	}
	done := make(chan result, 1)
	execCtx, cancelExec := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelExec()
	go func() {
		ex, err := c.Exec(execCtx, id, req, func(ev api.Event) {
			switch ev.Type {
			case api.EventStderr:
				_, _ = io.WriteString(errOut, ev.Data)
			case api.EventStdout:
				if listed {
					_, _ = io.WriteString(errOut, ev.Data)
					return
				}
				line.WriteString(ev.Data)
				if first, _, ok := strings.Cut(line.String(), "\n"); ok {
					listed = true
					if p, err := strconv.Atoi(strings.TrimSpace(first)); err == nil {
						port <- p
					}
				}
			}
		})
		done <- result{ex, err}
	}()

	var p int
	select {
	case p = <-port:
	case r := <-done:
		if r.err != nil {
			return 0, r.err
		}
		return 0, fmt.Errorf("the bridge in session %s ended before it listened (status %s, exit code %d): does the session have python3?", id, r.ex.Status, r.ex.ExitCode)
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	conn, err := c.UpgradePort(ctx, id, p, "/", mcpBridgeProtocol)
	if err != nil {
		return 0, err
	}
	// Closing the connection is how the bridge learns the client went: it
	// closes COMMAND's stdin, and stops a COMMAND that stays.
	go func() {
		select {
		case <-ctx.Done():
		case <-execCtx.Done():
		}
		conn.Close()
	}()
	go func() {
		// The port proxy ends both directions when one ends, so the end of
		// stdin is a frame, not a half-close: COMMAND's stdin closes and
		// its output keeps coming until it ends.
		_ = copyFramed(conn, in)
	}()
	_, _ = io.Copy(out, conn)
	conn.Close()

	// COMMAND ended (or the exchange did): its status, once the bridge
	// has stopped it; a bridge that does not end is left to its timeout.
	select {
	case r := <-done:
		if r.err != nil {
			return 0, r.err
		}
		switch r.ex.Status {
		case api.StatusOK, api.StatusError:
			return r.ex.ExitCode, nil
		default:
			return r.ex.ExitCode, fmt.Errorf("%s in session %s ended: %s (exit code %d)", argv[0], id, r.ex.Status, r.ex.ExitCode)
		}
	case <-time.After(15 * time.Second):
		return 0, fmt.Errorf("%s in session %s did not end after its input closed", argv[0], id)
	}
}

// maxFrame is the most stdin a frame to the bridge holds.
const maxFrame = 64 << 10

// copyFramed sends what in holds to the bridge as frames, each a 4-byte
// big-endian length and that many bytes, and the end of in as a frame of
// length 0 (a read error ends it too). The connection stays open after:
// closing it tells the bridge the client went, and stops COMMAND.
func copyFramed(w io.Writer, in io.Reader) error {
	buf := make([]byte, 4+maxFrame)
	for {
		n, err := in.Read(buf[4:])
		if n > 0 {
			binary.BigEndian.PutUint32(buf, uint32(n))
			if _, werr := w.Write(buf[:4+n]); werr != nil {
				return werr
			}
		}
		if err != nil {
			_, werr := w.Write([]byte{0, 0, 0, 0})
			return werr
		}
	}
}
