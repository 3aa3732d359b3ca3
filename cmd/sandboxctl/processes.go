package main

import (
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	"github.com/containerd/errdefs"
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
	// An attached process's output comes from the daemon, stdout and
	// stderr apart; another's from its log file.
	var exit *int
	err := c.ProcessOutput(ctx, id, pid, "start", follow, nil, func(o api.ProcessOutput) error {
		if o.ExitCode != nil {
			exit = o.ExitCode
			return nil
		}
		b, err := base64.StdEncoding.DecodeString(o.DataB64)
		if err != nil {
			return err
		}
		w := os.Stdout
		if o.Stream == api.StreamStderr {
			w = os.Stderr
		}
		_, err = w.Write(b)
		return err
	})
	if !errdefs.IsNotFound(err) {
		if err == nil && follow && exit != nil {
			fmt.Fprintf(os.Stderr, "sandboxctl: process %d exited with status %d\n", pid, *exit)
		}
		return err
	}
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
func (a *app) startDetached(ctx context.Context, id string, req *api.ProcessRequest, asJSON bool) error {
	p, err := a.client().StartProcess(ctx, id, req)
	if err != nil {
		return err
	}
	if asJSON {
		return printJSON(os.Stdout, p)
	}
	fmt.Println(p.PID)
	return nil
}

// newStdinCmd sends input to an attached process (exec -d -i).
func newStdinCmd(a *app) *cobra.Command {
	var eof bool
	cmd := &cobra.Command{
		Use:   "stdin ID PID [DATA]",
		Short: "Send input to a process started with exec -d -i (or -t): DATA, or this command's standard input",
		Example: `  pid=$(sandboxctl exec -d -i $id -- python3 -u -c 'import sys; [print(l.upper(), end="") for l in sys.stdin]')
  sandboxctl stdin $id $pid 'hello
'
  printf 'more\n' | sandboxctl stdin --eof $id $pid
  sandboxctl logs $id $pid`,
		Args:              cobra.RangeArgs(2, 3),
		ValidArgsFunction: a.completeSessions,
		RunE: func(cmd *cobra.Command, args []string) error {
			pid, err := strconv.Atoi(args[1])
			if err != nil || pid <= 0 {
				return fmt.Errorf("bad pid %q: give a process id", args[1])
			}
			c := a.client()
			if len(args) == 3 {
				return c.WriteStdin(cmd.Context(), args[0], pid, []byte(args[2]), eof)
			}
			// Standard input a piece at a time, as it comes.
			buf := make([]byte, 64<<10)
			for {
				n, rerr := os.Stdin.Read(buf)
				if n > 0 {
					if err := c.WriteStdin(cmd.Context(), args[0], pid, buf[:n], false); err != nil {
						return err
					}
				}
				if rerr == io.EOF {
					break
				}
				if rerr != nil {
					return rerr
				}
			}
			if eof {
				return c.WriteStdin(cmd.Context(), args[0], pid, nil, true)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&eof, "eof", false, "close the process's input after (it reads end of file)")
	return cmd
}
