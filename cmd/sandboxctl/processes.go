package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/client"
)

func newTopCmd(a *app) *cobra.Command {
	var asJSON bool
	var format string
	cmd := &cobra.Command{
		Use:   "top ID",
		Short: "List a session's processes (pid, cpu, memory, command)",
		Example: `  sandboxctl top $id
  sandboxctl top $id --format '{{.PID}} {{.Command}}'`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ps, err := a.client().Processes(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			switch {
			case asJSON:
				return printJSON(os.Stdout, ps)
			case format != "":
				return printFormatted(os.Stdout, format, ps)
			}
			t := newTable()
			fmt.Fprintln(t, "PID\tPPID\tCPU\tRSS\tSTARTED\tCOMMAND")
			for _, p := range ps {
				started := "-"
				if !p.StartedAt.IsZero() {
					started = ago(p.StartedAt)
				}
				rss := "-"
				if p.RSSBytes > 0 {
					rss = humanBytes(p.RSSBytes)
				}
				command := p.Command
				if p.Detached {
					command += " (detached)"
				}
				fmt.Fprintf(t, "%d\t%d\t%.2fs\t%s\t%s\t%s\n", p.PID, p.PPID, p.CPUSeconds, rss, started, command)
			}
			return t.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	cmd.Flags().StringVar(&format, "format", "", formatHelp)
	return cmd
}

func newKillCmd(a *app) *cobra.Command {
	var signal string
	cmd := &cobra.Command{
		Use:   "kill ID PID...",
		Short: "Send a signal (TERM by default) to processes of a session",
		Example: `  sandboxctl kill $id 42
  sandboxctl kill -s KILL $id 42 43`,
		Args: cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			for _, v := range args[1:] {
				pid, err := strconv.Atoi(v)
				if err != nil || pid <= 0 {
					return fmt.Errorf("bad pid %q: give process ids (sandboxctl top lists them)", v)
				}
				if err := a.client().SignalProcess(cmd.Context(), args[0], pid, signal); err != nil {
					return err
				}
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&signal, "signal", "s", "", "the signal: TERM (default), KILL, INT, HUP or a number")
	return cmd
}

// isPID says whether a logs argument is a process id (a number) rather
// than an execution's (16 hex digits).
func isPID(s string) bool {
	if len(s) == 0 || len(s) > 9 {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// showProcessLogs prints a background process's output; with follow, what
// it writes next too, until it ends.
func showProcessLogs(ctx context.Context, c *client.Client, id string, pid int, follow bool) error {
	var offset int64
	for {
		r, running, exit, err := c.ProcessLogs(ctx, id, pid, offset)
		if err != nil {
			return err
		}
		n, err := io.Copy(os.Stdout, r)
		r.Close()
		offset += n
		if err != nil {
			return err
		}
		if !follow || !running {
			if follow && exit != nil {
				fmt.Fprintf(os.Stderr, "sandboxctl: process %d exited with status %d\n", pid, *exit)
			}
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(logsPoll):
		}
	}
}

// startDetached starts argv in the background and prints its pid.
func (a *app) startDetached(ctx context.Context, id string, argv []string, env map[string]string, cwd string, asJSON bool) error {
	p, err := a.client().StartProcess(ctx, id, &api.ProcessRequest{Argv: argv, Env: env, Cwd: cwd})
	if err != nil {
		return err
	}
	if asJSON {
		return printJSON(os.Stdout, p)
	}
	fmt.Println(p.PID)
	return nil
}
