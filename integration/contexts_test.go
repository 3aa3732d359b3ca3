package integration

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/containerd/errdefs"

	"github.com/sandboxd/sandboxd/api"
)

// TestContexts: on each runtime, a code context is an interpreter of its
// own in the same sandbox (its globals, its folder; the files shared); a
// timeout resets that context only; it outlives a daemon restart with its
// state; a session restart starts it afresh (state_reset); the CLI makes,
// lists, runs in, restarts and deletes them.
func TestContexts(t *testing.T) {
	t.Parallel()
	eachRuntime(t, func(t *testing.T, rt, cfg string) {
		d := startDaemon(t, cfg)
		ctx := context.Background()
		id := d.session(t, nil)
		run := func(cid, code string) *api.Execution {
			t.Helper()
			e, err := d.c.Exec(ctx, id, &api.ExecRequest{Language: api.LanguagePython, Code: code, Context: cid}, nil)
			if err != nil {
				t.Fatalf("exec %q in %q: %v", code, cid, err)
			}
			return e
		}
		result := func(e *api.Execution) string {
			if e.Result == nil {
				return "<nil: " + e.Status + ">"
			}
			return *e.Result
		}
		if _, _, code := d.ctl(t, "", "exec", id, "--shell", "-c", "mkdir -p /workspace/sub"); code != 0 {
			t.Fatal("mkdir")
		}
		c, err := d.c.CreateContext(ctx, id, api.CreateContextRequest{Cwd: "sub"})
		if err != nil {
			t.Fatal(err)
		}
		run("", "x = 'default'")
		run(c.ID, "x = 'own'; open('shared.txt', 'w').write('from a context')")
		if got := result(run("", "x")); got != "'default'" {
			t.Errorf("default's x: %s", got)
		}
		if got := result(run(c.ID, "import os; (x, os.getcwd())")); got != "('own', '/workspace/sub')" {
			t.Errorf("the context's x and folder: %s", got)
		}
		if got := result(run("", "open('/workspace/sub/shared.txt').read()")); got != "'from a context'" {
			t.Errorf("a file the context wrote, read by default: %s", got)
		}
		// A timeout resets its context only.
		to := 1.0
		e, err := d.c.Exec(ctx, id, &api.ExecRequest{Language: api.LanguagePython, Context: c.ID, TimeoutS: &to,
			Code: "import signal, time\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\ntime.sleep(60)"}, nil)
		if err != nil || e.Status != api.StatusTimeout || !e.StateReset {
			t.Fatalf("a stuck cell in the context: %+v %v", e, err)
		}
		if got := result(run("", "x")); got != "'default'" {
			t.Errorf("default's x after the context's reset: %s", got)
		}
		run(c.ID, "y = 5")

		// A copy: the source's state, then its own.
		run("", "import json\nbig = bytearray(50 << 20)\nbig[-1] = 7")
		cp, errOut, code := d.ctl(t, "", "context", "create", "--from", "default", id)
		cp = strings.TrimSpace(cp)
		if code != 0 || cp == "" {
			t.Fatalf("context create --from: %d %s", code, errOut)
		}
		if got := result(run(cp, "(x, big[-1], json.dumps([1]))")); got != "('default', 7, '[1]')" {
			t.Errorf("the copy's state: %s", got)
		}
		run(cp, "x = 'copy'; big[-1] = 8")
		if got := result(run("", "(x, big[-1])")); got != "('default', 7)" {
			t.Errorf("the source after its copy changed: %s", got)
		}
		if _, _, code := d.ctl(t, "", "context", "rm", id, cp); code != 0 {
			t.Error("rm the copy")
		}
		run("", "del big")

		// The CLI.
		out, errOut, code := d.ctl(t, "", "exec", id, "--context", c.ID, "-c", "y * 2")
		if code != 0 || strings.TrimSpace(out) != "10" {
			t.Errorf("exec --context: %d %q %q", code, out, errOut)
		}
		out, _, code = d.ctl(t, "", "context", "ls", "--json", id)
		var list api.ContextList
		if code != 0 || json.Unmarshal([]byte(out), &list) != nil || len(list.Contexts) != 2 || list.Contexts[1].ID != c.ID {
			t.Errorf("context ls --json: %d %s", code, out)
		}
		cid, _, code := d.ctl(t, "", "context", "create", id)
		cid = strings.TrimSpace(cid)
		if code != 0 || cid == "" {
			t.Fatalf("context create: %d", code)
		}
		if _, errOut, code := d.ctl(t, "", "context", "rm", id, cid); code != 0 {
			t.Errorf("context rm: %d %s", code, errOut)
		}
		if _, errOut, code := d.ctl(t, "", "exec", id, "--context", cid, "-c", "1"); code == 0 || !strings.Contains(errOut, "no context") {
			t.Errorf("exec in a deleted context: %d %q", code, errOut)
		}

		// JavaScript: the session's node interpreter, and a context's.
		out, errOut, code = d.ctl(t, "", "exec", id, "--js", "-c", "var a = 2; console.log('from node'); a * 21")
		if code != 0 || out != "from node\n42\n" {
			t.Errorf("exec --js: %d %q %q", code, out, errOut)
		}
		js, err := d.c.CreateContext(ctx, id, api.CreateContextRequest{Language: api.LanguageJavaScript, Cwd: "sub"})
		if err != nil {
			t.Fatal(err)
		}
		out, errOut, code = d.ctl(t, "", "exec", id, "--js", "--context", js.ID, "-c", "[typeof a, process.cwd()]")
		if code != 0 || strings.TrimSpace(out) != "[ 'undefined', '/workspace/sub' ]" {
			t.Errorf("exec --js in a javascript context: %d %q %q", code, out, errOut)
		}
		if _, err := d.c.Exec(ctx, id, &api.ExecRequest{Language: api.LanguagePython, Code: "1", Context: js.ID}, nil); !errdefs.IsInvalidArgument(err) {
			t.Errorf("Python in a javascript context: %v", err)
		}

		// A daemon restart keeps the context and its state.
		d.terminate()
		d.launch()
		if got := result(run(c.ID, "y")); got != "5" {
			t.Errorf("the context's y after a daemon restart: %s", got)
		}
		// A session restart starts it afresh, in its folder.
		if _, err := d.c.RestartSession(ctx, id); err != nil {
			t.Fatal(err)
		}
		e = run(c.ID, "import os; os.getcwd()")
		if !e.StateReset || result(e) != "'/workspace/sub'" {
			t.Errorf("first execution in the context of a new sandbox: state_reset %v, %s", e.StateReset, result(e))
		}
		if _, err := d.c.RestartContext(ctx, id, c.ID); err != nil {
			t.Fatal(err)
		}
		run(c.ID, "z = 1")
		if _, _, code := d.ctl(t, "", "context", "restart", id, c.ID); code != 0 {
			t.Error("context restart")
		}
		if e := run(c.ID, "z"); e.Status != api.StatusError || e.Error == nil || e.Error.Name != "NameError" {
			t.Errorf("z after a restart: %+v", e)
		}
		if err := d.c.DeleteContext(ctx, id, api.ContextDefault); !errdefs.IsInvalidArgument(err) {
			t.Errorf("delete the default context: %v", err)
		}
	})
}
