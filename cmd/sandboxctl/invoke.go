package main

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"golang.org/x/term"

	"github.com/sandboxd/sandboxd/api"
)

// invokeFlags are invoke's own flags; the sandbox's are sessionFlags.
type invokeFlags struct {
	handler, event, eventFile string
	profile, asJSON           bool
}

// invokeJSON is what --json prints: one object, whatever the outcome.
type invokeJSON struct {
	Result     json.RawMessage `json:"result"`
	Error      *invokeFailure  `json:"error"`
	DurationMS float64         `json:"duration_ms"`
	Phases     invokePhases    `json:"phases"`
}

// invokePhases is where an invocation's time went: getting a sandbox (and
// everything around the execution: the request, the files, the answer),
// compiling and running the file's top level, and the handler's call.
type invokePhases struct {
	SandboxMS float64 `json:"sandbox_ms"`
	ImportMS  float64 `json:"import_ms"`
	HandlerMS float64 `json:"handler_ms"`
}

const invokeLong = `Invoke runs an AWS Lambda-style Python handler, def handler(event, context),
once in a fresh sandbox from the warm pool, and removes the sandbox afterwards.

The handler is lambda_handler, else handler, unless --handler names it. The event
is --event, --event-file (- for standard input) or, with neither, standard input
when it is not a terminal; {} otherwise. An event object's "__timeout" key sets the
timeout in seconds (default 300, at most 3600; --timeout wins over it) and is
removed before the handler sees the event. The context has function_name (the
file's name without .py), aws_request_id (a fresh UUID), memory_limit_in_mb (the
sandbox's memory limit, a string as in Lambda), get_remaining_time_in_millis(),
function_version, invoked_function_arn, log_group_name and log_stream_name.

The handler's return value is printed on stdout as JSON (json.dumps, default=str);
what the handler prints goes to stderr. The sandbox flags (--memory, --cpus,
--template, --network, --allow, --env, ...) shape the sandbox as for create.

Exit codes:
  0  the handler returned
  1  the handler (or the file's top level) raised: the traceback is on stderr;
     also when the sandbox killed it (out of memory)
  2  the handler file or the event file cannot be read, the event is not JSON,
     or a flag is wrong: checked before anything is sent
  3  the file has a syntax error, or defines no such handler
  4  the handler did not return within the timeout
  5  no sandbox: the daemon is unreachable or refused to create one (a quota,
     a template that does not exist, a limit out of range)`

func newInvokeCmd(a *app) *cobra.Command {
	var f invokeFlags
	var s sessionFlags
	cmd := &cobra.Command{
		Use:   "invoke HANDLER.py [flags]",
		Short: "Run a Lambda-style handler once in a fresh sandbox",
		Long:  invokeLong,
		Example: `  sandboxctl invoke app.py --event '{"name": "Ada"}'
  sandboxctl invoke app.py --event-file event.json --handler main
  echo '{"__timeout": 10}' | sandboxctl invoke app.py --memory 256M
  sandboxctl invoke app.py --profile --json`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return f.invoke(cmd, a, &s, args)
		},
	}
	s.addTo(cmd, a)
	cmd.Flags().Lookup("timeout").Usage = fmt.Sprintf("timeout of the invocation in seconds (default: the event's __timeout, else %d; at most %d)", invokeDefaultTimeout, invokeMaxTimeout)
	cmd.Flags().StringVar(&f.handler, "handler", "", "the handler function (default lambda_handler, else handler); Lambda's file.function form is taken too")
	cmd.Flags().StringVar(&f.event, "event", "", "the event, as JSON")
	cmd.Flags().StringVar(&f.eventFile, "event-file", "", "read the event from this file (- for standard input)")
	cmd.Flags().BoolVar(&f.profile, "profile", false, "print a cProfile of the handler (top 20 by cumulative time) and the phase timings on stderr")
	cmd.Flags().BoolVar(&f.asJSON, "json", false, "print one JSON object {result, error, duration_ms, phases} instead of the result")
	// A wrong flag is a wrong input, exit code 2 like any other: the
	// codes above 0 each mean one thing to a script.
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error {
		fmt.Fprintln(os.Stderr, "sandboxctl:", err)
		return exitError{invokeExitBadInput}
	})
	return cmd
}

// invoke does one invocation and returns its exit code as an exitError.
func (f *invokeFlags) invoke(cmd *cobra.Command, a *app, s *sessionFlags, args []string) error {
	start := time.Now()
	req, cfg, err := f.prepare(cmd.Flags(), s, args)
	if err == nil && cfg.MemoryMB == 0 {
		cfg.MemoryMB = memoryLimit(cmd.Context(), a.client(), req.Template)
	}
	if err == nil {
		req.Code, err = driverCode(cfg)
	}
	if err != nil {
		return f.finish(start, inputFailure(err), 0)
	}
	// Handler output is shown as it comes; stdout carries the driver's
	// report alone, read from the execution at the end.
	e, err := a.client().Run(cmd.Context(), req, func(ev api.Event) {
		if ev.Type == api.EventStderr {
			fmt.Fprint(os.Stderr, ev.Data)
		}
	})
	if err != nil {
		return f.finish(start, sandboxFailure(err), 0)
	}
	o := outcomeOf(e, cfg.TimeoutS)
	if strings.TrimSpace(o.Rest) != "" {
		fmt.Fprint(os.Stderr, o.Rest)
	}
	return f.finish(start, o, e.DurationMS)
}

// prepare checks everything that can be checked here and builds the
// request, all but its code, and the driver's configuration: nothing is
// sent for a file or an event that cannot be used.
func (f *invokeFlags) prepare(fs *pflag.FlagSet, s *sessionFlags, args []string) (*api.RunRequest, driverConfig, error) {
	var cfg driverConfig
	if len(args) != 1 {
		return nil, cfg, errors.New("give one handler file, e.g. sandboxctl invoke app.py --event '{}'")
	}
	handlers, err := handlerNames(f.handler)
	if err != nil {
		return nil, cfg, err
	}
	src, err := os.ReadFile(args[0])
	if err != nil {
		return nil, cfg, fmt.Errorf("cannot read %s: %w", args[0], unwrapPath(err))
	}
	text, err := readEvent(f.event, fs.Changed("event"), f.eventFile, os.Stdin, term.IsTerminal(int(os.Stdin.Fd())))
	if err != nil {
		return nil, cfg, err
	}
	event, eventTimeout, err := parseEvent(text)
	if err != nil {
		return nil, cfg, err
	}
	timeoutS, err := invokeTimeout(fs.Changed("timeout"), s.timeout, eventTimeout)
	if err != nil {
		return nil, cfg, err
	}
	sreq, err := s.request(fs)
	if err != nil {
		return nil, cfg, err
	}
	sreq.TimeoutS = &timeoutS
	var memoryMB int64
	if sreq.MemoryMB != nil {
		memoryMB = *sreq.MemoryMB
	}
	name := filepath.Base(args[0])
	cfg = newDriverConfig(name, handlers, event, timeoutS, memoryMB, f.profile, time.Now())
	return &api.RunRequest{
		CreateSessionRequest: *sreq, Language: api.LanguagePython,
		Files: []api.RunFile{{Path: name, ContentBase64: base64.StdEncoding.EncodeToString(src)}},
	}, cfg, nil
}

// unwrapPath drops the path an os error repeats: the message names it.
func unwrapPath(err error) error {
	if u := errors.Unwrap(err); u != nil {
		return u
	}
	return err
}

// finish prints the outcome (the result, or one sentence on stderr; with
// --json, one object on stdout either way) and returns the exit code.
func (f *invokeFlags) finish(start time.Time, o invokeOutcome, execMS float64) error {
	total := float64(time.Since(start).Microseconds()) / 1000
	var ph invokePhases
	if o.Report != nil {
		ph.ImportMS, ph.HandlerMS = o.Report.ImportMS, o.Report.HandlerMS
	}
	if execMS > 0 {
		ph.SandboxMS = max(total-execMS, 0)
	}
	if o.Failure != nil {
		fmt.Fprintln(os.Stderr, "sandboxctl:", o.Failure.sentence())
	}
	if f.profile && execMS > 0 {
		fmt.Fprintf(os.Stderr, "phases: sandbox %.1f ms, import %.1f ms, handler %.1f ms (total %.1f ms)\n",
			ph.SandboxMS, ph.ImportMS, ph.HandlerMS, total)
	}
	if f.asJSON {
		out := invokeJSON{Result: json.RawMessage("null"), Error: o.Failure, DurationMS: total, Phases: ph}
		if o.Result != nil {
			out.Result = resultJSON(*o.Result)
		}
		if err := printJSON(os.Stdout, out); err != nil {
			return err
		}
	} else if o.Result != nil {
		fmt.Fprintln(os.Stdout, *o.Result)
	}
	if o.Code != invokeExitOK {
		return exitError{o.Code}
	}
	return nil
}

// resultJSON is the result as --json embeds it: Python's json.dumps
// writes NaN and Infinity, which JSON has not, so such a result goes in as
// the string it was.
func resultJSON(text string) json.RawMessage {
	if json.Valid([]byte(text)) {
		return json.RawMessage(text)
	}
	b, _ := json.Marshal(text)
	return b
}
