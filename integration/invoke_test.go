package integration

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestInvoke runs Lambda-style handlers with sandboxctl invoke against a
// real daemon: every exit code, every way in for the event, the context,
// and what goes to stdout and to stderr.
func TestInvoke(t *testing.T) {
	t.Parallel()
	hostOnly(t)
	d := startDaemon(t, "")
	dir := t.TempDir()
	file := func(name, src string) string {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	invoke := func(stdin string, args ...string) (string, string, int) {
		t.Helper()
		return d.ctl(t, stdin, append([]string{"invoke"}, args...)...)
	}
	// ok invokes and decodes the result the handler returned.
	ok := func(stdin string, args ...string) (map[string]any, string) {
		t.Helper()
		out, stderr, code := invoke(stdin, args...)
		if code != 0 {
			t.Fatalf("invoke %v: exit %d\nstdout: %s\nstderr: %s", args, code, out, stderr)
		}
		var v map[string]any
		if err := json.Unmarshal([]byte(out), &v); err != nil {
			t.Fatalf("invoke %v: stdout is not the result as JSON: %q (%v)", args, out, err)
		}
		return v, stderr
	}
	fail := func(wantCode int, wantErr, stdin string, args ...string) string {
		t.Helper()
		out, stderr, code := invoke(stdin, args...)
		if code != wantCode || !strings.Contains(stderr, wantErr) {
			t.Fatalf("invoke %v: exit %d, stderr %q; want exit %d with %q (stdout %q)", args, code, stderr, wantCode, wantErr, out)
		}
		return stderr
	}

	echo := file("echo.py", `import os, sys
print("hello from the top level")

def lambda_handler(event, context):
    print("hello from the handler")
    os.system("echo hello from a child")
    return {"event": event, "function_name": context.function_name, "aws_request_id": context.aws_request_id,
            "memory_limit_in_mb": context.memory_limit_in_mb, "remaining": context.get_remaining_time_in_millis(),
            "function_version": context.function_version, "arn": context.invoked_function_arn,
            "log_group": context.log_group_name, "log_stream": context.log_stream_name,
            "greeting": os.environ.get("GREETING"), "env_name": os.environ.get("AWS_LAMBDA_FUNCTION_NAME"),
            "when": __import__("datetime").date(2026, 11, 25)}

def handler(event, context):
    raise AssertionError("lambda_handler comes first")
`)

	t.Run("context and output", func(t *testing.T) {
		v, stderr := ok("", echo, "--event", `{"n": 2, "__timeout": 30}`, "--memory", "256M", "-e", "GREETING=hi")
		if ev, _ := json.Marshal(v["event"]); string(ev) != `{"n":2}` {
			t.Errorf("event %s: want __timeout removed", ev)
		}
		if v["function_name"] != "echo" || v["function_version"] != "$LATEST" || v["memory_limit_in_mb"] != "256" ||
			v["arn"] != "arn:aws:lambda:us-east-1:000000000000:function:echo" || v["log_group"] != "/aws/lambda/echo" ||
			!strings.Contains(v["log_stream"].(string), "/[$LATEST]") || v["greeting"] != "hi" || v["env_name"] != "echo" ||
			v["when"] != "2026-11-25" {
			t.Errorf("context: %v", v)
		}
		if !regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`).MatchString(v["aws_request_id"].(string)) {
			t.Errorf("aws_request_id %v", v["aws_request_id"])
		}
		if r := v["remaining"].(float64); r <= 20000 || r > 30000 {
			t.Errorf("remaining %v ms of a 30 s timeout", r)
		}
		for _, want := range []string{"hello from the top level", "hello from the handler", "hello from a child"} {
			if !strings.Contains(stderr, want) {
				t.Errorf("stderr lacks %q: %q", want, stderr)
			}
		}
		w, _ := ok("", echo)
		if w["aws_request_id"] == v["aws_request_id"] {
			t.Errorf("the request id repeats: %v", w["aws_request_id"])
		}
		info, err := d.c.Info(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if want := strconv.FormatInt(info.Defaults.MemoryMB, 10); w["memory_limit_in_mb"] != want {
			t.Errorf("memory_limit_in_mb without --memory: %v, want the daemon's default %s", w["memory_limit_in_mb"], want)
		}
		if r := w["remaining"].(float64); r <= 290000 || r > 300000 {
			t.Errorf("remaining %v ms of the default 300 s", r)
		}
	})

	t.Run("event sources", func(t *testing.T) {
		eventFile := file("event.json", `{"from": "file"}`)
		if v, _ := ok("", echo, "--event-file", eventFile); v["event"].(map[string]any)["from"] != "file" {
			t.Errorf("--event-file: %v", v["event"])
		}
		if v, _ := ok(`{"from": "stdin"}`, echo); v["event"].(map[string]any)["from"] != "stdin" {
			t.Errorf("stdin: %v", v["event"])
		}
		if v, _ := ok(`{"from": "stdin"}`, echo, "--event-file", "-"); v["event"].(map[string]any)["from"] != "stdin" {
			t.Errorf("--event-file -: %v", v["event"])
		}
		if v, _ := ok("", echo); len(v["event"].(map[string]any)) != 0 {
			t.Errorf("no event: %v, want {}", v["event"])
		}
		if v, _ := ok(`{"ignored": true}`, echo, "--event", `{"from": "flag"}`); v["event"].(map[string]any)["from"] != "flag" {
			t.Errorf("--event over stdin: %v", v["event"])
		}
	})

	t.Run("handler names", func(t *testing.T) {
		short := file("short.py", "def handler(event, context):\n    return {'which': 'handler'}\n")
		if v, _ := ok("", short); v["which"] != "handler" {
			t.Errorf("default handler: %v", v)
		}
		named := file("named.py", "def main(event, context):\n    return {'which': 'main'}\n")
		if v, _ := ok("", named, "--handler", "main"); v["which"] != "main" {
			t.Errorf("--handler main: %v", v)
		}
		if v, _ := ok("", named, "--handler", "named.main"); v["which"] != "main" {
			t.Errorf("--handler named.main: %v", v)
		}
		fail(3, "named.py defines no lambda_handler and no handler", "", named)
		fail(3, "short.py defines no main", "", short, "--handler", "main")
		fail(2, "bad --handler", "", short, "--handler", "not-a-name")
	})

	t.Run("exit codes", func(t *testing.T) {
		raises := file("raises.py", "def helper():\n    raise ValueError('no good')\n\ndef handler(event, context):\n    helper()\n")
		stderr := fail(1, "the handler raised ValueError: no good", "", raises)
		if !strings.Contains(stderr, "Traceback (most recent call last)") || !strings.Contains(stderr, `raises.py", line 2, in helper`) {
			t.Errorf("no traceback on stderr: %q", stderr)
		}
		fail(2, "cannot read", "", filepath.Join(dir, "missing.py"))
		fail(2, "cannot read", "", dir)
		fail(2, "the event is not JSON", "", echo, "--event", "{nope")
		fail(2, "__timeout must be above 0 and at most 3600", "", echo, "--event", `{"__timeout": 7200}`)
		fail(2, "not both", "", echo, "--event", "{}", "--event-file", "x.json")
		fail(2, "unknown flag", "", echo, "--no-such-flag")
		fail(3, "syntax error", "", file("broken.py", "def handler(event, context)\n    return 1\n"))
		fail(1, "the invocation ended with status", "", file("exits.py", "import os\ndef handler(event, context):\n    os._exit(3)\n"))

		slow := file("slow.py", "import time\ndef handler(event, context):\n    print('going to sleep', flush=True)\n    time.sleep(60)\n")
		start := time.Now()
		stderr = fail(4, "did not return within its timeout of 1 s", "", slow, "--event", `{"__timeout": 1}`)
		if took := time.Since(start); took > 15*time.Second || !strings.Contains(stderr, "going to sleep") {
			t.Errorf("timeout took %v; stderr %q", took, stderr)
		}
		fail(4, "timeout of 1 s", "", slow, "--timeout", "1", "--event", `{"__timeout": 600}`)

		_, stderr, code := runCtl(t, filepath.Join(t.TempDir(), "nobody.sock"), nil, "", "invoke", echo)
		if code != 5 || !strings.Contains(stderr, "no sandbox for the handler") {
			t.Errorf("no daemon: exit %d, %q; want 5", code, stderr)
		}
		fail(5, "no sandbox for the handler", "", echo, "--template", "no-such-template")
	})

	t.Run("profile", func(t *testing.T) {
		prof := file("prof.py", "def work(n):\n    return sum(i * i for i in range(n))\n\ndef handler(event, context):\n    return {'sum': work(100000)}\n")
		v, stderr := ok("", prof, "--profile")
		if v["sum"] != float64(333328333350000) {
			t.Errorf("result %v", v)
		}
		for _, want := range []string{"top 20 by cumulative time", "cumulative", "(work)", "phases: sandbox ", " ms, import ", " ms, handler "} {
			if !strings.Contains(stderr, want) {
				t.Errorf("--profile: stderr lacks %q:\n%s", want, stderr)
			}
		}
	})

	t.Run("json", func(t *testing.T) {
		type answer struct {
			Result     json.RawMessage `json:"result"`
			Error      *struct{ Kind, Type, Message, Traceback string }
			DurationMS float64 `json:"duration_ms"`
			Phases     struct {
				SandboxMS float64 `json:"sandbox_ms"`
				ImportMS  float64 `json:"import_ms"`
				HandlerMS float64 `json:"handler_ms"`
			} `json:"phases"`
		}
		out, stderr, code := invoke("", echo, "--json", "--event", `{"k": "v"}`)
		var a answer
		if err := json.Unmarshal([]byte(out), &a); err != nil || code != 0 {
			t.Fatalf("--json: exit %d, %q (%v)\n%s", code, out, err, stderr)
		}
		if !strings.Contains(string(a.Result), `"k": "v"`) || a.Error != nil || a.DurationMS <= 0 || a.Phases.SandboxMS <= 0 ||
			a.Phases.HandlerMS <= 0 || a.Phases.SandboxMS+a.Phases.ImportMS+a.Phases.HandlerMS > a.DurationMS {
			t.Errorf("--json: %s", out)
		}
		raises := file("raises_json.py", "def handler(event, context):\n    raise KeyError('gone')\n")
		out, _, code = invoke("", raises, "--json")
		a = answer{}
		if err := json.Unmarshal([]byte(out), &a); err != nil || code != 1 || string(a.Result) != "null" || a.Error == nil ||
			a.Error.Kind != "raised" || a.Error.Type != "KeyError" || !strings.Contains(a.Error.Traceback, "raise KeyError") {
			t.Errorf("--json of a raise: exit %d, %s (%v)", code, out, err)
		}
	})
}
