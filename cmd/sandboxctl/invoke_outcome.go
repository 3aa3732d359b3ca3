package main

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/sandboxd/sandboxd/api"
)

// Exit codes of sandboxctl invoke: scripts and CI branch on them, so each
// names one class of failure and none moves.
const (
	invokeExitOK        = 0 // the handler returned
	invokeExitRaised    = 1 // the handler (or the file's top level) raised, or the sandbox killed it
	invokeExitBadInput  = 2 // the handler file, the event or a flag is unusable; nothing was sent
	invokeExitBadSource = 3 // a syntax error, or no such handler in the file
	invokeExitTimeout   = 4 // the invocation outlived its timeout
	invokeExitNoSandbox = 5 // no sandbox: the daemon is unreachable or refused the create
)

// Failure kinds, as --json's error.kind names them.
const (
	kindRaised    = "raised"
	kindKilled    = "killed"
	kindInput     = "input"
	kindSyntax    = "syntax"
	kindUndefined = "undefined"
	kindTimeout   = "timeout"
	kindSandbox   = "sandbox"
)

// driverReport is the line the driver writes on stdout at the end.
type driverReport struct {
	Outcome   string         `json:"outcome"`
	Result    *string        `json:"result,omitempty"`
	Error     *invokeFailure `json:"error,omitempty"`
	ImportMS  float64        `json:"import_ms"`
	HandlerMS float64        `json:"handler_ms"`
}

// invokeFailure is why an invocation did not return a value.
type invokeFailure struct {
	Kind      string `json:"kind"`
	Type      string `json:"type,omitempty"`
	Message   string `json:"message"`
	Traceback string `json:"traceback,omitempty"`
}

// invokeOutcome is what one invocation ended with: the handler's result
// (JSON text) or a failure, and the exit code that says which.
type invokeOutcome struct {
	Code    int
	Result  *string
	Failure *invokeFailure
	// Report is the driver's, nil if it wrote none; Rest is the stdout
	// that was not the report.
	Report *driverReport
	Rest   string
}

// findReport takes the driver's report out of the execution's stdout.
func findReport(stdout string) (*driverReport, string) {
	i := strings.LastIndex(stdout, invokeReportMark)
	if i < 0 {
		return nil, stdout
	}
	line, after, _ := strings.Cut(stdout[i+len(invokeReportMark):], "\n")
	rest := strings.TrimSuffix(stdout[:i], "\n") + after
	var r driverReport
	if err := json.Unmarshal([]byte(line), &r); err != nil {
		return nil, rest // a report cut short is no output of the handler's
	}
	return &r, rest
}

// outcomeOf maps an execution of the driver to the invocation's outcome;
// timeoutS is the bound it ran under, for the message.
func outcomeOf(e *api.Execution, timeoutS int) invokeOutcome {
	rep, rest := findReport(e.Stdout)
	o := invokeOutcome{Report: rep, Rest: rest}
	fail := func(code int, kind, msg string) invokeOutcome {
		o.Code, o.Failure = code, &invokeFailure{Kind: kind, Message: msg}
		return o
	}
	switch e.Status {
	case api.StatusOK:
	case api.StatusTimeout:
		return fail(invokeExitTimeout, kindTimeout, fmt.Sprintf("the handler did not return within its timeout of %d s", timeoutS))
	case api.StatusKilled:
		return fail(invokeExitRaised, kindKilled, "the sandbox killed the handler (out of memory or another limit)")
	default:
		// The driver catches what the handler raises, so this is the
		// interpreter itself gone (os._exit) or stopped.
		msg := fmt.Sprintf("the invocation ended with status %s", e.Status)
		if e.Error != nil {
			msg = fmt.Sprintf("the invocation ended with status %s: %s: %s", e.Status, e.Error.Name, e.Error.Value)
		}
		return fail(invokeExitRaised, kindRaised, msg)
	}
	if rep == nil {
		if e.Truncated {
			return fail(invokeExitRaised, kindRaised, "the handler's output was cut at the daemon's limit, and its result with it")
		}
		return fail(invokeExitRaised, kindRaised, "the handler ended the interpreter before it returned")
	}
	switch rep.Outcome {
	case "ok":
		if rep.Result == nil {
			return fail(invokeExitRaised, kindRaised, "the driver reported no result")
		}
		o.Result = rep.Result
		return o
	case kindSyntax, kindUndefined:
		o.Code = invokeExitBadSource
	default:
		o.Code = invokeExitRaised
		rep.Outcome = kindRaised
	}
	f := invokeFailure{Kind: rep.Outcome, Message: "the handler failed"}
	if rep.Error != nil {
		f = *rep.Error
		f.Kind = rep.Outcome
	}
	o.Failure = &f
	return o
}

// inputFailure is the outcome of an invocation refused before anything
// was sent.
func inputFailure(err error) invokeOutcome {
	return invokeOutcome{Code: invokeExitBadInput, Failure: &invokeFailure{Kind: kindInput, Message: err.Error()}}
}

// sandboxFailure is the outcome of an invocation the daemon did not run:
// whatever the client says (no daemon at the socket, a create refused, a
// stream cut), no sandbox ran the handler to an answer.
func sandboxFailure(err error) invokeOutcome {
	return invokeOutcome{Code: invokeExitNoSandbox, Failure: &invokeFailure{Kind: kindSandbox, Message: "no sandbox for the handler: " + err.Error()}}
}

// sentence is the one line sandboxctl prints on stderr for a failure.
func (f *invokeFailure) sentence() string {
	switch f.Kind {
	case kindRaised:
		if f.Type != "" {
			return fmt.Sprintf("the handler raised %s: %s", f.Type, firstLine(f.Message))
		}
	case kindSyntax:
		return "the handler file has a syntax error: " + firstLine(f.Message)
	}
	return firstLine(f.Message)
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
