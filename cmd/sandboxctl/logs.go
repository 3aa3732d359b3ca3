package main

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/client"
)

// logsPoll is how often logs -f asks how a running execution goes.
const logsPoll = 200 * time.Millisecond

func newLogsCmd(a *app) *cobra.Command {
	var follow, asJSON bool
	var tail int
	cmd := &cobra.Command{
		Use:   "logs ID [EXEC-ID | PID]",
		Short: "Print the output of a session's executions or background processes",
		Long: `Print what an execution wrote (stdout to stdout, stderr to stderr), or
what a background process (exec -d; its PID, a number) wrote, or,
without EXEC-ID, what the session's last executions wrote, oldest first,
each under a "==> EXEC-ID (language, status) <==" line. An execution still
running shows its output so far; -f follows it until it ends (Ctrl-C
leaves it running). The daemon keeps a session's last history_limit
executions.`,
		Example: `  sandboxctl logs $id
  eid=$(sandboxctl exec --no-wait $id -c 'import time; [print(i) or time.sleep(1) for i in range(5)]')
  sandboxctl logs -f $id $eid
  sandboxctl logs -f $id $(sandboxctl exec -d $id -- python3 train.py)`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			c := a.client()
			ctx := cmd.Context()
			if len(args) == 2 && isPID(args[1]) {
				pid, _ := strconv.Atoi(args[1])
				return showProcessLogs(ctx, c, args[0], pid, follow)
			}
			if len(args) == 2 {
				return showLogs(ctx, c, args[0], args[1], follow, asJSON)
			}
			list, err := c.Executions(ctx, args[0], tail)
			if err != nil {
				return err
			}
			for i, sum := range slices.Backward(list) {
				if !asJSON {
					if i < len(list)-1 {
						fmt.Println()
					}
					fmt.Printf("==> %s (%s, %s) <==\n", sum.ID, sum.Language, sum.Status)
				}
				if err := showLogs(ctx, c, args[0], sum.ID, follow && i == 0, asJSON); err != nil {
					return err
				}
			}
			return nil
		},
	}
	cmd.Flags().BoolVarP(&follow, "follow", "f", false, "follow a running execution until it ends")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print each execution as JSON")
	cmd.Flags().IntVarP(&tail, "tail", "n", 10, "without EXEC-ID: how many of the last executions (0: all that are kept)")
	return cmd
}

// showLogs prints execution eid's output; with follow, what it writes next
// too, until it ends.
func showLogs(ctx context.Context, c *client.Client, id, eid string, follow, asJSON bool) error {
	var outN, errN int
	for {
		e, err := c.Execution(ctx, id, eid)
		if err != nil {
			return err
		}
		running := e.Status == api.StatusRunning
		if asJSON {
			if !follow || !running {
				return printJSON(os.Stdout, e)
			}
		} else {
			// The output only grows while it runs: print what is new.
			fmt.Fprint(os.Stdout, e.Stdout[min(outN, len(e.Stdout)):])
			fmt.Fprint(os.Stderr, e.Stderr[min(errN, len(e.Stderr)):])
			outN, errN = len(e.Stdout), len(e.Stderr)
			if !running || !follow {
				if e.Result != nil {
					fmt.Println(*e.Result)
				}
				if e.Error != nil && e.Stderr == "" {
					fmt.Fprintf(os.Stderr, "%s: %s\n", e.Error.Name, e.Error.Value)
				}
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(logsPoll):
		}
	}
}
