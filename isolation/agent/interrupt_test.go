package agent

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"
)

// interruptedExec runs req and, as soon as its output contains a key of
// on, calls that key's function from another goroutine, as the daemon
// interrupts beside the Exec that reads. It returns the done message, the
// output and how long the execution took.
func interruptedExec(t *testing.T, ra *runningAgent, req Request, on map[string]func()) (*Message, string, time.Duration) {
	t.Helper()
	var out strings.Builder
	var wg sync.WaitGroup
	fired := map[string]bool{}
	t0 := time.Now()
	m, err := ra.conn.Exec(req, time.Minute, func(kind, data string) {
		out.WriteString(data)
		for key, f := range on {
			if !fired[key] && strings.Contains(out.String(), key) {
				fired[key] = true
				wg.Add(1)
				go func() { defer wg.Done(); f() }()
			}
		}
	}, nil)
	took := time.Since(t0)
	wg.Wait()
	if err != nil {
		t.Fatalf("exec %q: %v", req.Code, err)
	}
	return m, out.String(), took
}

// interrupt interrupts execution id, failing the test on an error.
func interrupt(t *testing.T, ra *runningAgent, id string) func() {
	return func() {
		if err := ra.conn.Interrupt(context.Background(), id); err != nil {
			t.Errorf("Interrupt(%q): %v", id, err)
		}
	}
}

// testInterrupt checks the interrupt of an agent of version 3 on: it
// stops a Python cell as a timeout does (KeyboardInterrupt, the
// interpreter and its state kept) and a shell command (SIGINT, then
// SIGKILL after the grace), and the execution answers interrupted. The
// interpreter has x = 41 from testContract.
func testInterrupt(t *testing.T, ra *runningAgent) {
	m, out, took := interruptedExec(t, ra, Request{ID: "py", Language: LanguagePython, Timeout: 60, Grace: 10,
		Code: "import time\nprint('started', flush=True)\ntime.sleep(30)"}, map[string]func(){"started": interrupt(t, ra, "py")})
	if m.Status != StatusInterrupted || m.ExitCode != 130 || m.StateReset || m.ID != "py" ||
		m.Error == nil || m.Error.Name != "KeyboardInterrupt" || took > 10*time.Second {
		t.Fatalf("python interrupt: %+v %q after %v", m, out, took)
	}
	if m, _, _ := ra.exec(t, Request{Language: LanguagePython, Code: "x"}); result(m) != "41" || m.StateReset {
		t.Fatalf("state after an interrupt: %+v", m)
	}

	// An interrupt of another execution (one that ended) is dropped.
	m, _, _ = interruptedExec(t, ra, Request{ID: "py2", Language: LanguagePython, Timeout: 60, Grace: 10,
		Code: "import time\nprint('started', flush=True)\ntime.sleep(1)\n'slept'"}, map[string]func(){"started": interrupt(t, ra, "py")})
	if m.Status != StatusOK || result(m) != "'slept'" {
		t.Fatalf("an interrupt of another execution stopped this one: %+v", m)
	}

	// A second interrupt while the first one's grace runs changes nothing:
	// the cell that caught the first one ends on its own, and the answer
	// still says interrupted. "started" is printed inside the try: the
	// interrupt can come while print still runs.
	m, out, _ = interruptedExec(t, ra, Request{ID: "py3", Language: LanguagePython, Timeout: 60, Grace: 10,
		Code: "import time\ntry:\n    print('started', flush=True)\n    time.sleep(30)\nexcept KeyboardInterrupt:\n" +
			"    print('caught', flush=True)\n    time.sleep(1)\n'survived'"},
		map[string]func(){"started": interrupt(t, ra, "py3"), "caught": interrupt(t, ra, "py3")})
	if m.Status != StatusInterrupted || m.ExitCode != 130 || result(m) != "'survived'" || m.StateReset || m.Error != nil {
		t.Fatalf("second interrupt: %+v %q", m, out)
	}

	// Shell: SIGINT to the command's process group ends it. The command
	// says "started" from the process that then waits, once its SIGINT
	// handling is in place: with "echo started; sleep 30" the SIGINT can
	// reach sleep between sh's fork and its exec, where sh's handler takes
	// it and exec forgets it (as a terminal's Ctrl-C can be lost).
	m, out, took = interruptedExec(t, ra, Request{ID: "sh", Language: LanguageShell, Timeout: 60, Grace: 10, Cwd: ra.ws,
		Code: `exec python3 -c 'import time; print("started", flush=True); time.sleep(30); print("never")'`},
		map[string]func(){"started": interrupt(t, ra, "sh")})
	if m.Status != StatusInterrupted || m.ExitCode != 130 || strings.Contains(out, "never") || took > 10*time.Second {
		t.Fatalf("shell interrupt: %+v %q after %v", m, out, took)
	}
	// A command that ignores SIGINT is killed once the grace has passed.
	m, out, took = interruptedExec(t, ra, Request{ID: "sh2", Language: LanguageShell, Timeout: 60, Grace: 0.3, Cwd: ra.ws,
		Code: "trap '' INT; echo started; sleep 30; echo never"}, map[string]func(){"started": interrupt(t, ra, "sh2")})
	if m.Status != StatusInterrupted || m.ExitCode != 130 || strings.Contains(out, "never") || took > 10*time.Second {
		t.Fatalf("shell interrupt, SIGINT ignored: %+v %q after %v", m, out, took)
	}

	// Any other request during an execution is refused; the daemon that
	// sent it hangs up, and the next one hears how the execution ended.
	_, err := ra.conn.Exec(Request{ID: "busy", Language: LanguagePython, Timeout: 60,
		Code: "import time\nprint('started', flush=True)\ntime.sleep(0.5)\n'finished'"}, time.Minute, func(kind, data string) {
		if strings.Contains(data, "started") {
			_ = ra.conn.send(Request{Op: OpPing}, time.Time{})
		}
	}, nil)
	if err == nil || !strings.Contains(err.Error(), "while an execution runs") {
		t.Fatalf("a ping during an execution: %v", err)
	}
	ra.conn.Close()
	ra.connect(t)
	if u := ra.pong.Undelivered; u == nil || u.ID != "busy" || u.Status != StatusOK || u.Result == nil || *u.Result != "'finished'" {
		t.Fatalf("the execution of a daemon that hung up: %+v", u)
	}
}
