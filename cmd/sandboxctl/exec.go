package main

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/sandboxd/sandboxd/api"
)

// codeFlags say what to run, shared by exec and run.
type codeFlags struct {
	code    string
	shell   bool
	js      bool
	timeout float64
	asJSON  bool
}

func (f *codeFlags) register(fs *pflag.FlagSet) {
	fs.StringVarP(&f.code, "code", "c", "", "code to run")
	fs.BoolVar(&f.shell, "shell", false, "run the code with /bin/sh instead of Python")
	fs.BoolVar(&f.js, "js", false, "run the code as JavaScript, in node (the template's; in a javascript --context, or the session's own)")
	fs.BoolVar(&f.asJSON, "json", false, "print the whole execution as JSON instead of its output")
}

func (f *codeFlags) language() string {
	switch {
	case f.shell:
		return api.LanguageShell
	case f.js:
		return api.LanguageJavaScript
	}
	return api.LanguagePython
}

// source reads the code: -c, a file, or "-" for standard input.
func (f *codeFlags) source(args []string) (string, error) {
	switch {
	case f.code != "" && len(args) > 0:
		return "", errors.New("give the code either with -c or as a file, not both")
	case f.code != "":
		return f.code, nil
	case len(args) == 0:
		return "", errors.New("no code given: use -c CODE, a file name, or - to read standard input")
	case args[0] == "-":
		b, err := io.ReadAll(os.Stdin)
		return string(b), err
	}
	b, err := os.ReadFile(args[0])
	if err != nil {
		return "", fmt.Errorf("cannot read %s: %w", args[0], errors.Unwrap(err))
	}
	return string(b), nil
}

// show prints an execution the way a terminal user expects and turns its
// status into the exit code; p printed its stream (nil: none was).
func (f *codeFlags) show(e *api.Execution, p *streamPrinter) error {
	if f.asJSON {
		if err := printJSON(os.Stdout, e); err != nil {
			return err
		}
	} else {
		noted := 0
		if p == nil {
			fmt.Fprint(os.Stdout, e.Stdout)
			fmt.Fprint(os.Stderr, e.Stderr)
		} else {
			noted = p.noted
		}
		if e.Result != nil {
			fmt.Println(*e.Result)
		}
		// The outputs the stream did not show: the last expression's,
		// the figures (a terminal shows neither HTML nor images).
		for _, o := range e.Outputs[min(noted, len(e.Outputs)):] {
			noteOutput(o)
		}
		if e.Truncated {
			fmt.Fprintln(os.Stderr, "sandboxctl: the output was cut at the daemon's limit")
		}
	}
	switch e.Status {
	case api.StatusOK:
		return nil
	case api.StatusTimeout:
		if !f.asJSON {
			fmt.Fprintln(os.Stderr, "sandboxctl: the execution timed out")
		}
		return exitError{124}
	case api.StatusKilled:
		if !f.asJSON {
			fmt.Fprintln(os.Stderr, "sandboxctl: the execution was killed (out of memory or another limit)")
		}
		return exitError{137}
	case api.StatusInterrupted:
		if !f.asJSON {
			fmt.Fprintln(os.Stderr, "sandboxctl: the execution was interrupted")
		}
		return exitError{130}
	}
	if e.ExitCode > 0 {
		return exitError{e.ExitCode}
	}
	return exitError{1}
}

// streamPrinter prints a streamed execution as it comes, and counts the
// displayed outputs it noted: they lead the Execution's outputs.
type streamPrinter struct{ noted int }

// event prints one event; a type it does not know (a newer daemon's) is
// skipped, as the contract lets.
func (p *streamPrinter) event(ev api.Event) {
	switch ev.Type {
	case api.EventStdout:
		fmt.Fprint(os.Stdout, ev.Data)
	case api.EventStderr:
		fmt.Fprint(os.Stderr, ev.Data)
	case api.EventDisplay:
		if ev.Output != nil {
			noteOutput(*ev.Output)
			p.noted++
		}
	}
}

// noteOutput says on stderr that there is an output (--json has it whole).
func noteOutput(o api.Output) {
	fmt.Fprintf(os.Stderr, "[display: %s, %s]\n", o.MIME, humanBytes(uint64(outputBytes(o))))
}

// outputBytes is the size of o's richest representation, decoded.
func outputBytes(o api.Output) int {
	if b, err := base64.StdEncoding.DecodeString(o.Data); err == nil {
		return len(b)
	}
	return len(o.Data)
}

// execSource is what exec runs: Python (or, with --shell, sh) from -c,
// --file or "-" (standard input), or else the command argv, run as is (no
// shell: each word is one argument), as docker exec runs it. A word after
// the id is never read as a file.
func (f *codeFlags) execSource(file string, argv []string) (lang, code string, err error) {
	given := 0
	for _, b := range []bool{f.code != "", file != "", len(argv) == 1 && argv[0] == "-"} {
		if b {
			given++
		}
	}
	isStdin := len(argv) == 1 && argv[0] == "-"
	switch {
	case f.shell && f.js:
		return "", "", errors.New("give --shell or --js, not both")
	case given > 1 || (given == 1 && len(argv) > 0 && !isStdin):
		return "", "", errors.New("give one of -c CODE, --file FILE, - (standard input) or a command after the id")
	case f.code != "":
		return f.language(), f.code, nil
	case file != "":
		b, err := os.ReadFile(file)
		if err != nil {
			return "", "", fmt.Errorf("cannot read %s: %w", file, errors.Unwrap(err))
		}
		return f.language(), string(b), nil
	case isStdin:
		b, err := io.ReadAll(os.Stdin)
		return f.language(), string(b), err
	case len(argv) > 0:
		if f.shell || f.js {
			return "", "", errors.New("--shell runs -c CODE with sh (--js with node); a command after the id runs as is: give one")
		}
		return api.LanguageShell, "exec " + shellQuote(argv), nil
	}
	return "", "", errors.New("no code given: use -c CODE, --file FILE, - to read standard input, or a command after the id (exec ID -- ls -la)")
}

// shellQuote is argv as sh words, each single-quoted: sh runs exactly
// these arguments, with no expansion.
func shellQuote(argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		q[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return strings.Join(q, " ")
}

func newExecCmd(a *app) *cobra.Command {
	var f codeFlags
	var env []string
	var cwd, file, execCtx string
	var noWait, interactive, tty, detach bool
	cmd := &cobra.Command{
		Use:   "exec ID [-c CODE | --file FILE | - | [--] COMMAND [ARG...]]",
		Short: "Run code or a command in a session (Python by default; variables persist)",
		Long: `Run code in a session (Python by default; variables persist), or a command
as docker exec does (exec ID -- ls -la: the words are its arguments, no
shell), its output streamed as it comes.

Ctrl-C interrupts the execution in the sandbox (Python raises
KeyboardInterrupt, a shell command gets SIGINT) and the session keeps its
state; a second Ctrl-C within 2 s leaves at once.

--no-wait prints the execution's id at once and leaves it running (within
its timeout); sandboxctl logs ID EXEC-ID [-f] shows how it goes.

-i and -t run a COMMAND attached, as docker exec -it does: -t gives it a
pseudo-terminal (full-screen programs, a shell, the python3 REPL; keys, ^C
and ^D go to it; resizes follow), -i sends standard input to it until its
end (cat big.csv | sandboxctl exec -i ID -- wc -l). Such a process has no
timeout; it ends when it exits or sandboxctl leaves.

-d runs a COMMAND in the background and prints its pid: it outlives the
call (no timeout) until it exits, is killed (sandboxctl kill), or the
session stops; sandboxctl logs ID PID [-f] shows its output, sandboxctl top
ID lists the session's processes. It counts against the session's pids
limit.

Exit status: 0 when the code succeeded; a command's own status (126: it
cannot run, 127: not found); 1 for a Python exception; 124 timed out; 130
interrupted; 137 killed (out of memory or another limit); 125 for an error
of sandboxctl or the daemon (nothing ran).`,
		Example: `  sandboxctl exec $id -c 'x = 1'
  sandboxctl exec $id -c 'x + 1'
  sandboxctl exec $id --shell -c 'pip list'
  sandboxctl exec $id --file script.py
  sandboxctl exec $id -- ls -la /workspace
  echo 'print(2)' | sandboxctl exec $id -
  sandboxctl exec -it $id -- bash
  cat big.csv | sandboxctl exec -i $id -- wc -l
  sandboxctl exec -d $id -- python3 -m http.server 8000
  eid=$(sandboxctl exec --no-wait $id -c 'train()'); sandboxctl logs -f $id $eid`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			vars, err := parseKV("environment variable", env)
			if err != nil {
				return err
			}
			if execCtx != "" && (detach || interactive || tty) {
				return errors.New("--context runs code in a context's interpreter: not with -d, -i or -t, which run a command")
			}
			if detach {
				if f.code != "" || file != "" || len(args) < 2 || args[1] == "-" || noWait || f.shell {
					return errors.New("--detach runs a command: sandboxctl exec -d ID -- COMMAND [ARG...] (not with -c, --file, -, --shell or --no-wait)")
				}
				// -i or -t with -d: an attached process, its input
				// and output through the daemon (sandboxctl stdin, logs).
				req := &api.ProcessRequest{Argv: args[1:], Env: vars, Cwd: cwd, Stdin: interactive}
				if tty {
					req.TTY = &api.TermSize{Rows: 24, Cols: 80}
				}
				return a.startDetached(cmd.Context(), args[0], req, f.asJSON)
			}
			if interactive || tty {
				if f.code != "" || file != "" || len(args) < 2 || args[1] == "-" || noWait || f.shell {
					return errors.New("-i and -t run a command: sandboxctl exec -it ID -- COMMAND [ARG...] (not -c, --file, -, --shell or --no-wait)")
				}
				return a.attachExec(cmd.Context(), args[0], args[1:], vars, cwd, tty, interactive)
			}
			lang, code, err := f.execSource(file, args[1:])
			if err != nil {
				return err
			}
			req := &api.ExecRequest{Language: lang, Code: code, Env: vars, Cwd: cwd, Context: execCtx}
			if cmd.Flags().Changed("timeout") {
				req.TimeoutS = &f.timeout
			}
			if noWait {
				eid, err := a.client().StartExec(cmd.Context(), args[0], req)
				if err != nil {
					return err
				}
				if f.asJSON {
					return printJSON(os.Stdout, api.ExecStarted{ID: eid})
				}
				fmt.Println(eid)
				return nil
			}
			var on func(api.Event)
			var p *streamPrinter
			if !f.asJSON {
				p = &streamPrinter{}
				on = p.event
			}
			ctx, leave := context.WithCancel(cmd.Context())
			defer leave()
			stop := a.interruptOnCtrlC(ctx, args[0], leave)
			e, err := a.client().Exec(ctx, args[0], req, on)
			left := stop()
			if err != nil {
				if left {
					fmt.Fprintln(os.Stderr, "sandboxctl: left the execution (it was interrupted)")
					return exitError{130}
				}
				return err
			}
			return f.show(e, p)
		},
	}
	f.register(cmd.Flags())
	cmd.Flags().Float64Var(&f.timeout, "timeout", 0, "timeout in seconds (default: the session's)")
	cmd.Flags().BoolVarP(&interactive, "interactive", "i", false, "send standard input to the command (with a COMMAND)")
	cmd.Flags().BoolVarP(&tty, "tty", "t", false, "give the command a pseudo-terminal (with a COMMAND)")
	cmd.Flags().BoolVarP(&detach, "detach", "d", false, "run the COMMAND in the background and print its pid (see top, logs, kill; with -i or -t its input stays open: see stdin)")
	cmd.Flags().StringArrayVarP(&env, "env", "e", nil, "environment variable KEY=VALUE for this execution (repeatable)")
	cmd.Flags().StringVarP(&cwd, "workdir", "w", "", "working directory (default /workspace)")
	cmd.Flags().StringVar(&execCtx, "context", "", "run in this code context: an interpreter of its own (see sandboxctl context)")
	_ = cmd.RegisterFlagCompletionFunc("context", func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		if len(args) == 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return a.completeContexts(cmd, args[:1], toComplete)
	})
	cmd.Flags().StringVarP(&file, "file", "F", "", "run this local file's code")
	cmd.Flags().BoolVarP(&noWait, "no-wait", "W", false, "print the execution's id at once and leave it running (see logs)")
	return cmd
}

func newRunCmd(a *app) *cobra.Command {
	var f codeFlags
	var s sessionFlags
	var files []string
	cmd := &cobra.Command{
		Use:   "run [FILE | -]",
		Short: "Run code once in a fresh sandbox that is removed afterwards",
		Example: `  sandboxctl run -c 'print(sum(range(10)))'
  sandboxctl run --file data.csv -c 'print(open("data.csv").read())'
  sandboxctl run --shell -c 'uname -a'`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			code, err := f.source(args)
			if err != nil {
				return err
			}
			sreq, err := s.request(cmd.Flags())
			if err != nil {
				return err
			}
			req := &api.RunRequest{CreateSessionRequest: *sreq, Language: f.language(), Code: code}
			for _, spec := range files {
				local, remote, ok := strings.Cut(spec, ":")
				if !ok {
					remote = filepath.Base(local)
				}
				b, err := os.ReadFile(local)
				if err != nil {
					return fmt.Errorf("cannot read %s: %w", local, errors.Unwrap(err))
				}
				req.Files = append(req.Files, api.RunFile{Path: remote, ContentBase64: base64.StdEncoding.EncodeToString(b)})
			}
			var on func(api.Event)
			var p *streamPrinter
			if !f.asJSON {
				p = &streamPrinter{}
				on = p.event
			}
			e, err := a.client().Run(cmd.Context(), req, on)
			if err != nil {
				return err
			}
			return f.show(e, p)
		},
	}
	f.register(cmd.Flags())
	s.addTo(cmd, a)
	cmd.Flags().StringArrayVar(&files, "file", nil, "copy LOCAL[:PATH] into the sandbox first (repeatable)")
	return cmd
}

func newHistoryCmd(a *app) *cobra.Command {
	var asJSON bool
	var format string
	var limit int
	cmd := &cobra.Command{
		Use:   "history ID",
		Short: "List a session's executions, newest first (running ones too)",
		Example: `  sandboxctl history $id
  sandboxctl history $id --format '{{.ID}} {{.Status}} {{.Metrics.CPUMS}}'`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			list, err := a.client().Executions(cmd.Context(), args[0], limit)
			if err != nil {
				return err
			}
			switch {
			case asJSON:
				return printJSON(os.Stdout, list)
			case format != "":
				return printFormatted(os.Stdout, format, list)
			}
			t := newTable()
			fmt.Fprintln(t, "ID\tLANGUAGE\tSTATUS\tEXIT\tDURATION\tCPU\tMEMORY PEAK\tSTARTED")
			for _, e := range list {
				exit, cpu, peak := "-", "-", "-"
				if e.ExitCode != nil {
					exit = fmt.Sprint(*e.ExitCode)
				}
				if m := e.Metrics; m != nil {
					cpu, peak = fmt.Sprintf("%.1fms", m.CPUMS), humanBytes(m.MemoryPeakBytes)
				}
				fmt.Fprintf(t, "%s\t%s\t%s\t%s\t%.1fms\t%s\t%s\t%s\n", e.ID, e.Language, e.Status, exit, e.DurationMS, cpu, peak, ago(e.StartedAt))
			}
			return t.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	cmd.Flags().StringVar(&format, "format", "", formatHelp)
	cmd.Flags().IntVarP(&limit, "limit", "n", 20, "how many (0: all that are kept)")
	return cmd
}
