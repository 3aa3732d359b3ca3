package integration

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sandboxd/sandboxd/api"
)

// TestBadRequests checks every refusal has the contract's status and body.
func TestBadRequests(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, "")
	id := d.session(t, nil)
	cases := []struct {
		method, path, body string
		status             int
		code               string
	}{
		{"POST", "/v1/sessions", "{not json", 400, api.CodeInvalidArgument},
		{"POST", "/v1/sessions", "", 400, api.CodeInvalidArgument},
		{"POST", "/v1/sessions", `{"memory_mb": 1}`, 400, api.CodeInvalidArgument},
		{"POST", "/v1/sessions", `{"memory_mb": 10000000}`, 400, api.CodeInvalidArgument},
		{"POST", "/v1/sessions", `{"cpus": 1000}`, 400, api.CodeInvalidArgument},
		{"POST", "/v1/sessions", `{"cpus": -1}`, 400, api.CodeInvalidArgument},
		{"POST", "/v1/sessions", `{"pids": 1}`, 400, api.CodeInvalidArgument},
		{"POST", "/v1/sessions", `{"timeout_s": 0}`, 400, api.CodeInvalidArgument},
		{"POST", "/v1/sessions", `{"network": "host"}`, 400, api.CodeInvalidArgument},
		{"POST", "/v1/sessions", `{"memroy_mb": 64}`, 400, api.CodeInvalidArgument},
		{"POST", "/v1/sessions", `{"env": {"A=B": "c"}}`, 400, api.CodeInvalidArgument},
		{"POST", "/v1/sessions", `{"memory_mb": "lots"}`, 400, api.CodeInvalidArgument},
		{"POST", "/v1/sessions", `{"template": "nope"}`, 404, api.CodeNotFound},
		{"POST", "/v1/sessions", `{} {}`, 400, api.CodeInvalidArgument},
		{"GET", "/v1/sessions?label=novalue", "", 400, api.CodeInvalidArgument},
		{"GET", "/v1/sessions/does-not-exist", "", 404, api.CodeNotFound},
		{"DELETE", "/v1/sessions/does-not-exist", "", 404, api.CodeNotFound},
		{"POST", "/v1/sessions/does-not-exist/exec", `{"language":"python","code":"1"}`, 404, api.CodeNotFound},
		{"POST", "/v1/sessions/" + id + "/exec", `{"language":"ruby","code":"1"}`, 400, api.CodeInvalidArgument},
		{"POST", "/v1/sessions/" + id + "/exec", `{"code":"1"}`, 400, api.CodeInvalidArgument},
		{"POST", "/v1/sessions/" + id + "/exec", `{"language":"python","code":"1","timeout_s":-1}`, 400, api.CodeInvalidArgument},
		{"POST", "/v1/sessions/" + id + "/exec", `{"language":"python","code":"1","timeout_s":99999}`, 400, api.CodeInvalidArgument},
		{"GET", "/v1/sessions/" + id + "/files", "", 400, api.CodeInvalidArgument},
		{"GET", "/v1/sessions/" + id + "/files?path=nothing-here", "", 404, api.CodeNotFound},
		{"GET", "/v1/sessions/" + id + "/executions?limit=x", "", 400, api.CodeInvalidArgument},
		{"POST", "/v1/run", `{"language":"python","code":"1","files":[{"path":"a","content_base64":"!!"}]}`, 400, api.CodeInvalidArgument},
		{"POST", "/v1/run", `{"language":"python","code":"1","files":[{"path":"../a","content_base64":""}]}`, 400, api.CodeInvalidArgument},
		{"GET", "/v2/nothing", "", 404, api.CodeNotFound},
		// What encoding/json would take silently, and bytes the agent
		// once crashed on: refused before anything reaches the sandbox.
		{"POST", "/v1/sessions", `null`, 400, api.CodeInvalidArgument},
		{"POST", "/v1/sessions", `{"memory_mb":64,"memory_mb":128}`, 400, api.CodeInvalidArgument},
		{"POST", "/v1/sessions/" + id + "/exec", `{"language":"shell","code":"echo a\u0000b"}`, 400, api.CodeInvalidArgument},
		{"POST", "/v1/sessions/" + id + "/exec", `{"language":"python","code":"1\u0000"}`, 400, api.CodeInvalidArgument},
		{"POST", "/v1/sessions/" + id + "/exec", `{"language":"shell","code":"pwd","cwd":"a\u0000b"}`, 400, api.CodeInvalidArgument},
		{"POST", "/v1/sessions/" + id + "/exec", `{"language":"shell","code":"pwd","cwd":"../../etc"}`, 400, api.CodeInvalidArgument},
		{"POST", "/v1/sessions/" + id + "/exec", `{"language":"shell","code":"pwd","cwd":"/etc"}`, 400, api.CodeInvalidArgument},
		{"GET", "/v1/sessions/" + id + "/files?path=/etc/" + strings.Repeat("x", 3000), "", 400, api.CodeInvalidArgument},
		{"GET", "/v1/sessions/" + strings.Repeat("s", 3000), "", 404, api.CodeNotFound},
	}
	d.py(t, id, "kept = 7")
	for _, c := range cases {
		status, body := d.raw(t, c.method, c.path, c.body)
		var eb api.ErrorBody
		if err := json.Unmarshal(body, &eb); err != nil || status != c.status || eb.Error.Code != c.code || eb.Error.Message == "" {
			t.Errorf("%.80s %.80s %.80s: got %d %.300s, want %d %s", c.method, c.path, c.body, status, body, c.status, c.code)
		}
		// A message quotes a short prefix of what it rejects, at most.
		if len(eb.Error.Message) > 300 {
			t.Errorf("%.80s %.80s: a message of %d bytes: %.100s…", c.method, c.path, len(eb.Error.Message), eb.Error.Message)
		}
	}
	// The session is unharmed by all of that: same interpreter.
	if e := d.py(t, id, "kept"); result(e) != "7" || e.StateReset {
		t.Fatalf("session after bad requests: %+v", e)
	}
	// cwd is relative to /workspace.
	d.sh(t, id, "mkdir -p sub/dir")
	if e, err := d.c.Exec(context.Background(), id, &api.ExecRequest{Language: api.LanguageShell, Code: "pwd", Cwd: "sub/dir"}, nil); err != nil || e.Stdout != "/workspace/sub/dir\n" {
		t.Fatalf("cwd sub/dir: %+v %v", e, err)
	}
	status, body := d.raw(t, "GET", "/v1/health", "")
	var h api.Health
	if err := json.Unmarshal(body, &h); status != 200 || err != nil || h.Status != api.HealthOK || h.DataDir == nil || !h.DataDir.OK || h.DataDir.FreeMB <= 0 {
		t.Fatalf("health: %d %s", status, body)
	}
	status, body = d.raw(t, "GET", "/metrics", "")
	if status != 200 || !strings.Contains(string(body), "sandboxd_executions_total") {
		t.Fatalf("metrics: %d", status)
	}
}

func TestSessionQuota(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, "max_sessions = 2\n")
	d.session(t, nil)
	d.session(t, nil)
	status, body := d.raw(t, "POST", "/v1/sessions", "{}")
	if status != 429 || !strings.Contains(string(body), api.CodeResourceExhausted) {
		t.Fatalf("third session: %d %s", status, body)
	}
}

func TestOneShotRun(t *testing.T) {
	t.Parallel()
	eachRuntime(t, func(t *testing.T, rt, cfg string) {
		d := startDaemon(t, cfg)
		status, body := d.raw(t, "POST", "/v1/run", `{"language":"python","code":"print(open('data.txt').read().upper())\n6*7","files":[{"path":"data.txt","content_base64":"aGVsbG8="}],"memory_mb":128}`)
		var e api.Execution
		if err := json.Unmarshal(body, &e); err != nil || status != 200 || e.Stdout != "HELLO\n" || result(&e) != "42" {
			t.Fatalf("run: %d %s", status, body)
		}
		status, body = d.raw(t, "POST", "/v1/run", `{"language":"shell","code":"exit 7"}`)
		if err := json.Unmarshal(body, &e); err != nil || status != 200 || e.ExitCode != 7 || e.Status != api.StatusError {
			t.Fatalf("run shell: %d %s", status, body)
		}
		list, err := d.c.ListSessions(t.Context(), nil)
		if err != nil || len(list) != 0 {
			t.Fatalf("one-shot runs must leave no session: %+v %v", list, err)
		}
		// The sandbox goes right after the answer.
		waitFor(t, func() bool {
			ents, _ := os.ReadDir(filepath.Join(d.stateDir(), "sandboxes"))
			return len(ents) == 0
		})
		assertNoSandboxesLeft(t, d, nil, false)
	})
}

// whileRunning starts an execution that prints and then sleeps, waits until
// its first output arrives, and returns a channel with its end.
func whileRunning(t *testing.T, run func(on func(api.Event)) (*api.Execution, error)) <-chan error {
	t.Helper()
	started := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		var once sync.Once
		_, err := run(func(api.Event) { once.Do(func() { close(started) }) })
		done <- err
	}()
	select {
	case <-started:
	case err := <-done:
		t.Fatalf("the execution ended before it printed: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("the execution did not start")
	}
	return done
}

// TestOneShotRunsCountUnderTheQuota checks a running one-shot run holds a
// place under max_sessions until it ends.
func TestOneShotRunsCountUnderTheQuota(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, "max_sessions = 1\n")
	done := whileRunning(t, func(on func(api.Event)) (*api.Execution, error) {
		return d.c.Run(context.Background(), &api.RunRequest{Language: "shell", Code: "echo started; sleep 3"}, on)
	})
	if status, body := d.raw(t, "POST", "/v1/sessions", "{}"); status != 429 {
		t.Fatalf("a session was created while a one-shot run held the only place: %d %s", status, body)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	d.session(t, nil) // the place is free again
}

func TestExecConcurrencyLimit(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, "max_concurrent_execs = 1\n")
	a, b := d.session(t, nil), d.session(t, nil)
	done := whileRunning(t, func(on func(api.Event)) (*api.Execution, error) {
		return d.c.Exec(context.Background(), a, &api.ExecRequest{Language: "shell", Code: "echo started; sleep 2"}, on)
	})
	status, body := d.raw(t, "POST", "/v1/sessions/"+b+"/exec", `{"language":"python","code":"1"}`)
	if status != 429 || !strings.Contains(string(body), "executions at once") {
		t.Fatalf("second execution: %d %s", status, body)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if e := d.py(t, b, "1"); result(e) != "1" {
		t.Fatalf("after the first ended: %+v", e)
	}
}
