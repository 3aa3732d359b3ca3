package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/sandboxd/sandboxd/api"
)

func TestReadEvent(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "e.json")
	os.WriteFile(file, []byte(`{"from": "file"}`), 0o644)
	for _, c := range []struct {
		name      string
		event     string
		eventSet  bool
		file      string
		stdin     string
		terminal  bool
		want      string
		wantError string
	}{
		{name: "flag", event: `{"a": 1}`, eventSet: true, stdin: "ignored", want: `{"a": 1}`},
		{name: "empty flag", event: "", eventSet: true, stdin: "ignored", want: ""},
		{name: "file", file: file, want: `{"from": "file"}`},
		{name: "file dash", file: "-", stdin: `[1]`, terminal: true, want: `[1]`},
		{name: "stdin pipe", stdin: `{"from": "stdin"}`, want: `{"from": "stdin"}`},
		{name: "stdin terminal", stdin: `{"never": "read"}`, terminal: true, want: ""},
		{name: "both", event: "{}", eventSet: true, file: file, wantError: "not both"},
		{name: "missing file", file: filepath.Join(dir, "nope.json"), wantError: "cannot read the event file"},
	} {
		got, err := readEvent(c.event, c.eventSet, c.file, strings.NewReader(c.stdin), c.terminal)
		if c.wantError != "" {
			if err == nil || !strings.Contains(err.Error(), c.wantError) {
				t.Errorf("%s: error %v, want %q", c.name, err, c.wantError)
			}
			continue
		}
		if err != nil || string(got) != c.want {
			t.Errorf("%s: %q %v, want %q", c.name, got, err, c.want)
		}
	}
}

func TestParseEvent(t *testing.T) {
	for _, c := range []struct {
		in        string
		want      string
		timeout   float64
		wantError string
	}{
		{in: "", want: "{}"},
		{in: " \n", want: "{}"},
		{in: `{"a": 12345678901234567890}`, want: `{"a": 12345678901234567890}`},
		{in: `[1, 2]`, want: `[1, 2]`},
		{in: `"text"`, want: `"text"`},
		{in: `null`, want: `null`},
		{in: `{"__timeout": 2, "k": "v"}`, want: `{"__timeout": 2, "k": "v"}`, timeout: 2},
		{in: `{"__timeout": 1.5}`, want: `{"__timeout": 1.5}`, timeout: 1.5},
		{in: `{"__timeout": 3600}`, want: `{"__timeout": 3600}`, timeout: 3600},
		{in: `{"__timeout": 3601}`, wantError: "at most 3600"},
		{in: `{"__timeout": 0}`, wantError: "above 0"},
		{in: `{"__timeout": -1}`, wantError: "above 0"},
		{in: `{"__timeout": "10"}`, wantError: "not a string"},
		{in: `{"__timeout": null}`, wantError: "not null"},
		{in: `{"a": }`, wantError: "not JSON"},
		{in: `{} {}`, wantError: "more follows"},
		{in: `{"a": 1`, wantError: "not JSON"},
	} {
		got, timeout, err := parseEvent([]byte(c.in))
		if c.wantError != "" {
			if err == nil || !strings.Contains(err.Error(), c.wantError) {
				t.Errorf("%q: error %v, want %q", c.in, err, c.wantError)
			}
			continue
		}
		if err != nil || got != c.want || timeout != c.timeout {
			t.Errorf("%q: %q %v %v, want %q %v", c.in, got, timeout, err, c.want, c.timeout)
		}
	}
}

func TestInvokeTimeout(t *testing.T) {
	for _, c := range []struct {
		flagSet bool
		flag    int
		event   float64
		want    int
		ok      bool
	}{
		{want: 300, ok: true},
		{event: 2, want: 2, ok: true},
		{event: 1.2, want: 2, ok: true}, // whole seconds, rounded up
		{flagSet: true, flag: 5, event: 2, want: 5, ok: true},
		{flagSet: true, flag: 3600, want: 3600, ok: true},
		{flagSet: true, flag: 3601},
		{flagSet: true, flag: 0, event: 2},
		{flagSet: true, flag: -1},
	} {
		got, err := invokeTimeout(c.flagSet, c.flag, c.event)
		if (err == nil) != c.ok || got != c.want {
			t.Errorf("%+v: %d %v", c, got, err)
		}
	}
}

func TestHandlerNames(t *testing.T) {
	for _, c := range []struct {
		flag string
		want []string
	}{
		{"", []string{"lambda_handler", "handler"}},
		{"main", []string{"main"}},
		{"app.main", []string{"main"}},
		{"pkg.app.on_event", []string{"on_event"}},
		{"_x1", []string{"_x1"}},
		{"1x", nil},
		{"app.", nil},
		{"a-b", nil},
		{"f()", nil},
	} {
		got, err := handlerNames(c.flag)
		if c.want == nil {
			if err == nil {
				t.Errorf("%q: %v, want an error", c.flag, got)
			}
			continue
		}
		if err != nil || strings.Join(got, ",") != strings.Join(c.want, ",") {
			t.Errorf("%q: %v %v, want %v", c.flag, got, err, c.want)
		}
	}
}

// report is a driver report line, as the driver writes it.
func report(t *testing.T, r driverReport) string {
	t.Helper()
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	return "\n" + invokeReportMark + string(b) + "\n"
}

func TestOutcomeOf(t *testing.T) {
	result := `{"ok": true}`
	for _, c := range []struct {
		name     string
		e        api.Execution
		code     int
		kind     string
		sentence string
		rest     string
	}{
		{name: "ok", e: api.Execution{Status: api.StatusOK, Stdout: report(t, driverReport{Outcome: "ok", Result: &result})}, code: 0},
		{name: "ok with stray stdout", e: api.Execution{Status: api.StatusOK, Stdout: "stray" + report(t, driverReport{Outcome: "ok", Result: &result})}, code: 0, rest: "stray"},
		{name: "raised", e: api.Execution{Status: api.StatusOK, Stdout: report(t, driverReport{Outcome: "raised", Error: &invokeFailure{Type: "ValueError", Message: "bad\nworse"}})},
			code: 1, kind: kindRaised, sentence: "the handler raised ValueError: bad"},
		{name: "syntax", e: api.Execution{Status: api.StatusOK, Stdout: report(t, driverReport{Outcome: "syntax", Error: &invokeFailure{Type: "SyntaxError", Message: "invalid syntax (line 3)"}})},
			code: 3, kind: kindSyntax, sentence: "the handler file has a syntax error: invalid syntax (line 3)"},
		{name: "undefined", e: api.Execution{Status: api.StatusOK, Stdout: report(t, driverReport{Outcome: "undefined", Error: &invokeFailure{Type: "HandlerNotFound", Message: "app.py defines no main"}})},
			code: 3, kind: kindUndefined, sentence: "app.py defines no main"},
		{name: "unknown outcome", e: api.Execution{Status: api.StatusOK, Stdout: report(t, driverReport{Outcome: "strange"})}, code: 1, kind: kindRaised},
		{name: "ok without result", e: api.Execution{Status: api.StatusOK, Stdout: report(t, driverReport{Outcome: "ok"})}, code: 1, kind: kindRaised},
		{name: "no report", e: api.Execution{Status: api.StatusOK}, code: 1, kind: kindRaised, sentence: "the handler ended the interpreter before it returned"},
		{name: "cut", e: api.Execution{Status: api.StatusOK, Stdout: invokeReportMark + `{"outcome": "ok", "res`, Truncated: true}, code: 1, kind: kindRaised, sentence: "the handler's output was cut at the daemon's limit, and its result with it"},
		{name: "timeout", e: api.Execution{Status: api.StatusTimeout}, code: 4, kind: kindTimeout, sentence: "the handler did not return within its timeout of 2 s"},
		{name: "killed", e: api.Execution{Status: api.StatusKilled, ExitCode: 137}, code: 1, kind: kindKilled},
		{name: "driver error", e: api.Execution{Status: api.StatusError, Error: &api.ExecError{Name: "SystemExit", Value: "the interpreter exited with status 3"}}, code: 1, kind: kindRaised,
			sentence: "the invocation ended with status error: SystemExit: the interpreter exited with status 3"},
		{name: "lost", e: api.Execution{Status: api.StatusLost}, code: 1, kind: kindRaised},
	} {
		o := outcomeOf(&c.e, 2)
		if o.Code != c.code {
			t.Errorf("%s: code %d, want %d", c.name, o.Code, c.code)
		}
		if c.code == 0 {
			if o.Failure != nil || o.Result == nil || *o.Result != result {
				t.Errorf("%s: %+v", c.name, o)
			}
		} else if o.Failure == nil || o.Failure.Kind != c.kind || (c.sentence != "" && o.Failure.sentence() != c.sentence) {
			t.Errorf("%s: failure %+v, want kind %s, sentence %q", c.name, o.Failure, c.kind, c.sentence)
		}
		if o.Rest != c.rest {
			t.Errorf("%s: rest %q, want %q", c.name, o.Rest, c.rest)
		}
	}
}

func TestFailureOutcomes(t *testing.T) {
	for _, c := range []struct {
		o        invokeOutcome
		code     int
		kind     string
		sentence string
	}{
		{inputFailure(errors.New("cannot read app.py: no such file or directory")), 2, kindInput, "cannot read app.py: no such file or directory"},
		{sandboxFailure(errors.New(`no such template: "nope"`)), 5, kindSandbox, `no sandbox for the handler: no such template: "nope"`},
	} {
		if c.o.Code != c.code || c.o.Failure.Kind != c.kind || c.o.Failure.sentence() != c.sentence || c.o.Result != nil {
			t.Errorf("%+v %+v, want %d %s %q", c.o, c.o.Failure, c.code, c.kind, c.sentence)
		}
	}
}

func TestDriverConfig(t *testing.T) {
	now := time.Date(2026, 11, 25, 4, 0, 0, 0, time.UTC)
	cfg := newDriverConfig("my_app.py", []string{"main"}, `{"a": 1}`, 7, 256, true, now)
	if cfg.Path != "/workspace/my_app.py" || cfg.FunctionName != "my_app" || cfg.TimeoutS != 7 || cfg.MemoryMB != 256 || !cfg.Profile {
		t.Fatalf("config: %+v", cfg)
	}
	if !regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`).MatchString(cfg.RequestID) {
		t.Errorf("request id %q is not a UUID v4", cfg.RequestID)
	}
	if other := newDriverConfig("my_app.py", nil, "{}", 1, 0, false, now); other.RequestID == cfg.RequestID || other.LogStream == cfg.LogStream {
		t.Errorf("ids repeat: %s %s", cfg.RequestID, cfg.LogStream)
	}
	if cfg.ARN != "arn:aws:lambda:us-east-1:000000000000:function:my_app" || cfg.LogGroup != "/aws/lambda/my_app" ||
		!regexp.MustCompile(`^2026/11/25/\[\$LATEST\][0-9a-f]{32}$`).MatchString(cfg.LogStream) {
		t.Errorf("names: %+v", cfg)
	}
	code, err := driverCode(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(code, driverSource) || strings.Contains(code, `{"a": 1}`) {
		t.Errorf("the configuration is not carried base64-encoded:\n%s", code[len(driverSource):])
	}
}

// runDriver runs the driver with the host's python3 on a handler file, as
// the sandbox would (fd 1 and 2 are pipes there too), and returns its
// outcome and stderr.
func runDriver(t *testing.T, src string, handlers []string, event string, profile bool) (invokeOutcome, string) {
	t.Helper()
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3 on this host")
	}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "fn.py"), []byte(src), 0o644)
	cfg := newDriverConfig("fn.py", handlers, event, 30, 128, profile, time.Now())
	cfg.Path = filepath.Join(dir, "fn.py")
	code, err := driverCode(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(python, "-c", code)
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("driver: %v\n%s", err, stderr.String())
	}
	return outcomeOf(&api.Execution{Status: api.StatusOK, Stdout: stdout.String()}, 30), stderr.String()
}

func TestDriver(t *testing.T) {
	t.Run("ok", func(t *testing.T) {
		o, stderr := runDriver(t, `
import os, sys
def lambda_handler(event, context):
    print("to stderr")
    os.system("echo child to stderr")
    sys.stdout.write("also stderr\n")
    return {"event": event, "name": context.function_name, "left": context.get_remaining_time_in_millis() > 0,
            "mem": context.memory_limit_in_mb, "version": context.function_version, "obj": object}
def handler(event, context):
    raise AssertionError("not the first default")
`, invokeDefaultHandlers, `{"__timeout": 30, "k": [1, 2]}`, false)
		if o.Code != 0 || o.Result == nil {
			t.Fatalf("%+v\n%s", o, stderr)
		}
		var got map[string]any
		if err := json.Unmarshal([]byte(*o.Result), &got); err != nil {
			t.Fatal(err)
		}
		ev, _ := json.Marshal(got["event"])
		if string(ev) != `{"k":[1,2]}` || got["name"] != "fn" || got["left"] != true || got["version"] != "$LATEST" ||
			got["obj"] != "<class 'object'>" || got["mem"] == "" {
			t.Errorf("result %s", *o.Result)
		}
		for _, want := range []string{"to stderr", "child to stderr", "also stderr"} {
			if !strings.Contains(stderr, want) {
				t.Errorf("stderr lacks %q: %q", want, stderr)
			}
		}
		if strings.TrimSpace(o.Rest) != "" {
			t.Errorf("stdout beside the report: %q", o.Rest)
		}
	})
	t.Run("raised", func(t *testing.T) {
		o, stderr := runDriver(t, "def handler(event, context):\n    return 1 / 0\n", invokeDefaultHandlers, "{}", false)
		if o.Code != 1 || o.Failure.Type != "ZeroDivisionError" || !strings.Contains(stderr, "Traceback") ||
			!strings.Contains(stderr, "fn.py\", line 2, in handler") || strings.Contains(stderr, "_sandboxd_invoke") {
			t.Errorf("%+v\n%s", o.Failure, stderr)
		}
	})
	t.Run("raised at import", func(t *testing.T) {
		o, stderr := runDriver(t, "import no_such_module_here\n", invokeDefaultHandlers, "{}", false)
		if o.Code != 1 || o.Failure.Type != "ModuleNotFoundError" {
			t.Errorf("%+v\n%s", o.Failure, stderr)
		}
	})
	t.Run("syntax", func(t *testing.T) {
		o, stderr := runDriver(t, "def handler(event, context):\n    return (\n", invokeDefaultHandlers, "{}", false)
		if o.Code != 3 || o.Failure.Kind != kindSyntax || !strings.Contains(o.Failure.Message, "line 2") || !strings.Contains(stderr, "SyntaxError") {
			t.Errorf("%+v\n%s", o.Failure, stderr)
		}
	})
	t.Run("undefined", func(t *testing.T) {
		o, _ := runDriver(t, "def other(event, context):\n    return 1\n", invokeDefaultHandlers, "{}", false)
		if o.Code != 3 || o.Failure.Kind != kindUndefined || o.Failure.sentence() != "fn.py defines no lambda_handler and no handler" {
			t.Errorf("%+v", o.Failure)
		}
		o, _ = runDriver(t, "main = 3\n", []string{"main"}, "{}", false)
		if o.Code != 3 || o.Failure.sentence() != "main in fn.py is of type int, not a function" {
			t.Errorf("%+v", o.Failure)
		}
	})
	t.Run("profile", func(t *testing.T) {
		o, stderr := runDriver(t, "def work():\n    return sum(range(1000))\ndef main(event, context):\n    return work()\n", []string{"main"}, "{}", true)
		if o.Code != 0 || *o.Result != "499500" || !strings.Contains(stderr, "cumulative") || !strings.Contains(stderr, "(work)") || o.Report.HandlerMS <= 0 {
			t.Errorf("%+v %+v\n%s", o, o.Report, stderr)
		}
	})
}

func TestResultJSON(t *testing.T) {
	if got := string(resultJSON(`{"a": [1, null]}`)); got != `{"a": [1, null]}` {
		t.Errorf("valid: %s", got)
	}
	if got := string(resultJSON(`NaN`)); got != `"NaN"` {
		t.Errorf("NaN: %s", got)
	}
}

func TestTemplateMemory(t *testing.T) {
	mb := int64(128)
	info := &api.Info{Defaults: api.Limits{MemoryMB: 512}}
	for _, c := range []struct {
		t    *api.Template
		info *api.Info
		want int64
	}{
		{&api.Template{Limits: &api.LimitDefaults{MemoryMB: &mb}}, info, 128},
		{&api.Template{Limits: &api.LimitDefaults{}}, info, 512},
		{&api.Template{}, info, 512},
		{nil, nil, 0},
	} {
		if got := templateMemory(c.t, c.info); got != c.want {
			t.Errorf("%+v: %d, want %d", c.t, got, c.want)
		}
	}
}
