// Command sandboxctl is the command-line client of sandboxd.
package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/sandboxd/sandboxd/client"
	"github.com/sandboxd/sandboxd/internal/manpage"
	"github.com/sandboxd/sandboxd/internal/version"
)

// exitError ends sandboxctl with a code and no message of its own (the
// executed code already printed what it had to say).
type exitError struct{ code int }

func (e exitError) Error() string { return fmt.Sprintf("exit status %d", e.code) }

func main() {
	root := newRoot()
	if err := root.Execute(); err != nil {
		var ee exitError
		if errors.As(err, &ee) {
			os.Exit(ee.code)
		}
		fmt.Fprintln(os.Stderr, "sandboxctl:", err)
		os.Exit(exitFailure)
	}
}

// exitFailure is the status of an error of sandboxctl or the daemon (a
// bad flag, no daemon, a refused request), as docker's 125: apart from
// every status the code run in a sandbox can give.
const exitFailure = 125

// app is what every command shares.
type app struct {
	socket string
	host   string
	// remote is the client of --host (or $SANDBOXD_HOST), nil for the
	// local socket.
	remote *client.Client
}

func (a *app) client() *client.Client {
	if a.remote != nil {
		return a.remote
	}
	return client.New(a.socket)
}

// resolveHost makes the client of --host or $SANDBOXD_HOST, if either
// says one; --socket says the local daemon and wins over the variable.
func (a *app) resolveHost(cmd *cobra.Command) error {
	host := a.host
	if host == "" && !cmd.Flags().Changed("socket") {
		host = os.Getenv(client.HostEnv)
	}
	if host == "" {
		return nil
	}
	if a.socket != "" {
		return errors.New("give --host or --socket, not both")
	}
	c, err := client.NewHost(host)
	if err != nil {
		return err
	}
	a.remote = c
	return nil
}

func newRoot() *cobra.Command {
	a := &app{}
	root := &cobra.Command{
		Use:   "sandboxctl",
		Short: "Control sandboxd: sessions that run untrusted code",
		Long: `sandboxctl talks to sandboxd over its Unix socket.

  id=$(sandboxctl create --memory 512M)
  sandboxctl exec $id -c 'x = 6 * 7'
  sandboxctl exec $id -c 'print(x)'
  sandboxctl exec $id --shell -c 'ls -la'
  sandboxctl cp data.csv $id:data.csv
  sandboxctl rm $id
  sandboxctl run -c 'print("one-shot")'

Exit status: 125 when sandboxctl or the daemon failed (nothing ran); exec
and run exit with the code's status (see sandboxctl exec --help); invoke
has its own (0-5).`,
		Version:       version.Version,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.PersistentFlags().StringVar(&a.socket, "socket", "", "daemon socket (default $SANDBOXD_SOCKET or "+client.DefaultSocket+")")
	root.PersistentFlags().StringVarP(&a.host, "host", "H", "", "daemon to reach: unix:///path/to.sock, or ssh://[user@]host[:port][/path/to.sock] through ssh (default $SANDBOXD_HOST)")
	root.PersistentPreRunE = func(cmd *cobra.Command, _ []string) error { return a.resolveHost(cmd) }
	root.AddCommand(
		newInfoCmd(a), newNodeCmd(a), newVersionCmd(a), newCreateCmd(a), newUpdateCmd(a), newLsCmd(a), newInspectCmd(a),
		newExecCmd(a), newRunCmd(a), newInvokeCmd(a), newCpCmd(a), newStatCmd(a), newMkdirCmd(a), newMvCmd(a), newWatchCmd(a), newStatsCmd(a), newRmCmd(a),
		newLifecycleCmd(a, "stop", "Stop sessions: processes end, the workspace stays"),
		newLifecycleCmd(a, "start", "Start stopped sessions with a fresh interpreter"),
		newLifecycleCmd(a, "restart", "Restart sessions with a fresh interpreter, same workspace"),
		newLifecycleCmd(a, "pause", "Pause sessions: every process frozen, memory and state kept, no CPU"),
		newLifecycleCmd(a, "resume", "Resume paused or hibernated sessions where they stopped"),
		newLifecycleCmd(a, "hibernate", "Hibernate sessions: memory saved to disk, RAM and CPU freed (runsc); their next use wakes them"),
		newWaitCmd(a), newLogsCmd(a), newStdinCmd(a), newHealthCmd(a), newDialStdioCmd(a), newTopCmd(a), newKillCmd(a),
		newPruneCmd(a),
		newNetworkCmd(a), newPipCmd(a), newPortCmd(a), newMCPCmd(a), newMCPProxyCmd(a), newHistoryCmd(a), newContextCmd(a), newVolumeCmd(a), newSnapshotCmd(a), newForkCmd(a), newUndoCmd(a), newEventsCmd(a), newDoctorCmd(a), newTemplateCmd(a), newE2BCmd(a),
	)
	root.AddCommand(manpage.Command(root, "1"))
	return root
}
