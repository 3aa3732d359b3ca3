package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sandboxd/sandboxd/api"
)

func TestPythonStatePersists(t *testing.T) {
	t.Parallel()
	eachRuntimeAlsoInVM(t, func(t *testing.T, rt, cfg string) {
		d := startDaemon(t, cfg)
		id := d.session(t, nil)
		if e := d.py(t, id, "x = 41\ndef inc(v):\n    return v + 1"); e.Status != api.StatusOK || e.Result != nil {
			t.Fatalf("assignment: %+v", e)
		}
		if e := d.py(t, id, "inc(x)"); result(e) != "42" {
			t.Fatalf("result = %s, want 42 (%+v)", result(e), e)
		}
		if e := d.py(t, id, "None"); e.Result != nil {
			t.Fatalf("None must give no result, got %s", result(e))
		}
		if e := d.py(t, id, "print('hi'); 'x' * 3"); e.Stdout != "hi\n" || result(e) != "'xxx'" {
			t.Fatalf("stdout %q result %s", e.Stdout, result(e))
		}
	})
}

func TestPythonExceptions(t *testing.T) {
	t.Parallel()
	eachRuntime(t, func(t *testing.T, rt, cfg string) {
		d := startDaemon(t, cfg)
		id := d.session(t, nil)
		e := d.py(t, id, "a = 1\n1/0")
		if e.Status != api.StatusError || e.Error == nil || e.Error.Name != "ZeroDivisionError" || e.Error.Value != "division by zero" {
			t.Fatalf("exception: %+v", e)
		}
		if !strings.Contains(e.Error.Traceback, "line 2") || !strings.Contains(e.Stderr, "ZeroDivisionError") {
			t.Fatalf("traceback %q stderr %q", e.Error.Traceback, e.Stderr)
		}
		if e := d.py(t, id, "a"); result(e) != "1" {
			t.Fatalf("state before the exception is kept: %s", result(e))
		}
		if e := d.py(t, id, "def f(:"); e.Error == nil || e.Error.Name != "SyntaxError" {
			t.Fatalf("syntax error: %+v", e)
		}
		if e := d.py(t, id, "raise SystemExit(3)"); e.Status != api.StatusError || e.Error.Name != "SystemExit" {
			t.Fatalf("SystemExit: %+v", e)
		}
		if e := d.py(t, id, "a + 1"); result(e) != "2" {
			t.Fatalf("session survives SystemExit: %+v", e)
		}
	})
}

func TestChildProcessOutputIsCaptured(t *testing.T) {
	t.Parallel()
	eachRuntime(t, func(t *testing.T, rt, cfg string) {
		d := startDaemon(t, cfg)
		id := d.session(t, nil)
		e := d.py(t, id, "import os, subprocess\nos.system('echo from-system')\nsubprocess.run(['sh', '-c', 'echo to-stderr >&2'])\nprint('from-python')")
		if !strings.Contains(e.Stdout, "from-system") || !strings.Contains(e.Stdout, "from-python") || !strings.Contains(e.Stderr, "to-stderr") {
			t.Fatalf("stdout %q stderr %q", e.Stdout, e.Stderr)
		}
	})
}

func TestShell(t *testing.T) {
	t.Parallel()
	eachRuntimeAlsoInVM(t, func(t *testing.T, rt, cfg string) {
		d := startDaemon(t, cfg)
		id := d.session(t, nil)
		e := d.sh(t, id, "pwd; echo oops >&2; exit 3")
		if e.Status != api.StatusError || e.ExitCode != 3 || e.Stdout != "/workspace\n" || e.Stderr != "oops\n" {
			t.Fatalf("shell: %+v", e)
		}
		if e := d.sh(t, id, "echo hi > f.txt && cat f.txt"); e.Status != api.StatusOK || e.ExitCode != 0 || e.Stdout != "hi\n" {
			t.Fatalf("shell ok: %+v", e)
		}
		if e := d.py(t, id, "open('/workspace/f.txt').read()"); result(e) != "'hi\\n'" {
			t.Fatalf("python sees the shell's file: %s", result(e))
		}
		timeout := 5.0
		e, err := d.c.Exec(context.Background(), id, &api.ExecRequest{Language: "shell", Code: "echo $FOO; pwd", Env: map[string]string{"FOO": "bar"}, Cwd: "/tmp", TimeoutS: &timeout}, nil)
		if err != nil || e.Stdout != "bar\n/tmp\n" {
			t.Fatalf("env and cwd: %+v %v", e, err)
		}
	})
}

func TestStreaming(t *testing.T) {
	t.Parallel()
	eachRuntime(t, func(t *testing.T, rt, cfg string) {
		d := startDaemon(t, cfg)
		id := d.session(t, nil)
		var events []api.Event
		e, err := d.c.Exec(context.Background(), id, &api.ExecRequest{Language: "python", Code: "import time, sys\nprint('one', flush=True)\ntime.sleep(0.3)\nprint('two', file=sys.stderr)\n7"}, func(ev api.Event) {
			events = append(events, ev)
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(events) < 2 || events[0].Type != "stdout" || events[0].Data != "one\n" || events[len(events)-1].Type != "stderr" {
			t.Fatalf("events %+v", events)
		}
		if result(e) != "7" || e.Stdout != "one\n" || e.Stderr != "two\n" {
			t.Fatalf("final execution %+v", e)
		}
	})
}

func TestTimeouts(t *testing.T) {
	t.Parallel()
	eachRuntime(t, func(t *testing.T, rt, cfg string) {
		d := startDaemon(t, cfg)
		id := d.session(t, nil)
		d.py(t, id, "kept = 'yes'")
		d.warmErrors(t, id)

		start := time.Now()
		e := d.exec(t, id, "python", "import time\ntime.sleep(60)", 1)
		if e.Status != api.StatusTimeout || e.StateReset || time.Since(start) > 5*time.Second {
			t.Fatalf("interruptible timeout: %+v after %v", e, time.Since(start))
		}
		if e := d.py(t, id, "kept"); result(e) != "'yes'" {
			t.Fatalf("state after an interrupted timeout: %+v", e)
		}

		start = time.Now()
		e = d.exec(t, id, "python", "import time\nwhile True:\n    try:\n        time.sleep(1)\n    except KeyboardInterrupt:\n        pass", 1)
		if e.Status != api.StatusTimeout || !e.StateReset || time.Since(start) > 6*time.Second {
			t.Fatalf("uninterruptible timeout: %+v after %v", e, time.Since(start))
		}
		if e := d.py(t, id, "kept"); e.Error == nil || e.Error.Name != "NameError" {
			t.Fatalf("state must be gone after a reset: %+v", e)
		}
		if e := d.py(t, id, "1 + 1"); result(e) != "2" {
			t.Fatalf("session usable after a reset: %+v", e)
		}

		start = time.Now()
		e = d.exec(t, id, "shell", "sleep 60 & sleep 60; echo never", 1)
		if e.Status != api.StatusTimeout || strings.Contains(e.Stdout, "never") || time.Since(start) > 5*time.Second {
			t.Fatalf("shell timeout: %+v after %v", e, time.Since(start))
		}
		if e := d.sh(t, id, "ps -eo comm | grep -c '^sleep$' || true"); strings.TrimSpace(e.Stdout) != "0" {
			t.Fatalf("the timed-out shell's process group must be gone: %q", e.Stdout)
		}
	})
}

func TestOutputCap(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, "max_output_bytes = 1000\n")
	id := d.session(t, nil)
	e := d.py(t, id, "print('x' * 5000)\nimport sys\nprint('y' * 10, file=sys.stderr)")
	if len(e.Stdout) != 1000 || !e.Truncated || e.Stderr != "yyyyyyyyyy\n" {
		t.Fatalf("stdout %d bytes, truncated %v, stderr %q", len(e.Stdout), e.Truncated, e.Stderr)
	}
	start := time.Now()
	e = d.exec(t, id, "shell", "yes | head -c 50000000", 20)
	if len(e.Stdout) != 1000 || !e.Truncated || e.Status != api.StatusOK {
		t.Fatalf("shell flood: %d bytes %+v", len(e.Stdout), e.Status)
	}
	t.Logf("50 MB of output capped in %v", time.Since(start))
	if e := d.py(t, id, "'still here'"); result(e) != "'still here'" {
		t.Fatalf("after flood: %+v", e)
	}
}

func TestStopStartRestart(t *testing.T) {
	t.Parallel()
	eachRuntimeAlsoInVM(t, func(t *testing.T, rt, cfg string) {
		d := startDaemon(t, cfg)
		ctx := context.Background()
		id := d.session(t, nil)
		d.py(t, id, "v = 5\nopen('keep.txt', 'w').write('kept')")
		s, err := d.c.StopSession(ctx, id)
		if err != nil || s.Status != api.StatusStopped {
			t.Fatalf("stop: %+v %v", s, err)
		}
		if _, err := d.c.Exec(ctx, id, &api.ExecRequest{Language: "python", Code: "v"}, nil); err == nil || !strings.Contains(err.Error(), "start it first") {
			t.Fatalf("exec on a stopped session must be a conflict: %v", err)
		}
		if code, body := d.raw(t, "POST", "/v1/sessions/"+id+"/exec", `{"language":"python","code":"1"}`); code != 409 || !strings.Contains(string(body), `"conflict"`) {
			t.Fatalf("stopped exec: %d %s", code, body)
		}
		if s, err = d.c.StartSession(ctx, id); err != nil || s.Status != api.StatusRunning {
			t.Fatalf("start: %+v %v", s, err)
		}
		if e := d.py(t, id, "open('keep.txt').read()"); result(e) != "'kept'" {
			t.Fatalf("workspace kept: %+v", e)
		}
		if e := d.py(t, id, "v"); e.Error == nil || e.Error.Name != "NameError" {
			t.Fatalf("fresh interpreter after start: %+v", e)
		}
		d.py(t, id, "w = 1")
		if s, err = d.c.RestartSession(ctx, id); err != nil || s.Status != api.StatusRunning {
			t.Fatalf("restart: %+v %v", s, err)
		}
		if e := d.py(t, id, "w"); e.Error == nil || e.Error.Name != "NameError" {
			t.Fatalf("fresh interpreter after restart: %+v", e)
		}
	})
}

func TestHistoryAndStats(t *testing.T) {
	t.Parallel()
	eachRuntime(t, func(t *testing.T, rt, cfg string) {
		d := startDaemon(t, cfg+"history_limit = 3\n")
		ctx := context.Background()
		id := d.session(t, &api.CreateSessionRequest{Labels: map[string]string{"agent": "a1"}})
		for i := 0; i < 5; i++ {
			d.py(t, id, "1")
		}
		hist, err := d.c.Executions(ctx, id, 0)
		if err != nil || len(hist) != 3 || hist[0].StartedAt.Before(hist[2].StartedAt) {
			t.Fatalf("history: %d %v", len(hist), err)
		}
		s, _ := d.c.GetSession(ctx, id)
		if s.ExecCount != 5 || !s.LastUsedAt.After(s.CreatedAt) {
			t.Fatalf("session counters: %+v", s)
		}
		d.py(t, id, "b = bytearray(64 << 20)\nfor i in range(0, len(b), 4096): b[i] = 1\nopen('blob', 'wb').write(b'x' * (3 << 20))")
		st, err := d.c.Stats(ctx, id)
		if err != nil || st.MemoryBytes < 64<<20 || st.MemoryLimitBytes != 512<<20 || st.Pids < 2 || st.DiskBytes < 3<<20 || st.ExecCount != 6 {
			t.Fatalf("stats: %+v %v", st, err)
		}
		other := d.session(t, &api.CreateSessionRequest{Labels: map[string]string{"agent": "a2"}})
		list, err := d.c.ListSessions(ctx, map[string]string{"agent": "a1"})
		if err != nil || len(list) != 1 || list[0].ID != id {
			t.Fatalf("label filter: %+v %v (other %s)", list, err, other)
		}
	})
}

// TestConcurrentSessions drives several sessions at once, each through its
// whole life, while others execute in a shared one.
func TestConcurrentSessions(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, "", raced)
	ctx := context.Background()
	shared := d.session(t, nil)
	d.py(t, shared, "n = 0")
	errs := make(chan error, 16)
	for i := 0; i < 8; i++ {
		go func(i int) {
			s, err := d.c.CreateSession(ctx, &api.CreateSessionRequest{})
			if err != nil {
				errs <- err
				return
			}
			e, err := d.c.Exec(ctx, s.ID, &api.ExecRequest{Language: "python", Code: fmt.Sprintf("%d * 2", i)}, nil)
			if err == nil && result(e) != fmt.Sprint(i*2) {
				err = fmt.Errorf("session %d: result %s", i, result(e))
			}
			if err == nil {
				err = d.c.DeleteSession(ctx, s.ID)
			}
			errs <- err
		}(i)
		go func() {
			_, err := d.c.Exec(ctx, shared, &api.ExecRequest{Language: "python", Code: "n += 1"}, nil)
			errs <- err
		}()
	}
	for i := 0; i < 16; i++ {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	if e := d.py(t, shared, "n"); result(e) != "8" {
		t.Fatalf("executions in one session run one at a time: n = %s", result(e))
	}
	if list, _ := d.c.ListSessions(ctx, nil); len(list) != 1 {
		t.Fatalf("sessions left: %d", len(list))
	}
}

// TestCellsAreMain checks the cells' namespace is the __main__ module, as
// in a notebook: functions defined in a cell pickle by reference, so
// multiprocessing works, and a user module named like the agent imports.
func TestCellsAreMain(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, "")
	id := d.session(t, nil)
	d.py(t, id, "def double(x):\n    return 2 * x")
	e := d.py(t, id, "import pickle, sys\nfrom multiprocessing import Pool\nwith Pool(2) as p:\n    r = p.map(double, [1, 2, 3])\n(r, pickle.loads(pickle.dumps(double))(4), sys.modules['__main__'].double is double)")
	if result(e) != "([2, 4, 6], 8, True)" {
		t.Fatalf("cells as __main__: %+v", e)
	}
	if _, err := d.c.PutFile(context.Background(), id, "_sandboxd_agent.py", strings.NewReader("MINE = 1\n")); err != nil {
		t.Fatal(err)
	}
	if e := d.py(t, id, "import _sandboxd_agent\n_sandboxd_agent.MINE"); result(e) != "1" {
		t.Fatalf("a user module with the agent's name: %+v", e)
	}
}
