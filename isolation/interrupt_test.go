package isolation

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestSandboxInterrupt interrupts a Python cell and a shell command from
// beside the Exec that waits for them, as the daemon does: each ends at
// once with status interrupted, Python with a KeyboardInterrupt and its
// variables kept. With nothing running, Interrupt does nothing.
func TestSandboxInterrupt(t *testing.T) {
	r := newTestRuntime(t)
	checkInterrupt(t, startTestSandbox(t, r, "interrupt1"))
}

// checkInterrupt interrupts a Python cell and a shell command in sb: each
// answers interrupted, the interpreter keeps its state.
func checkInterrupt(t *testing.T, sb *Sandbox) {
	t.Helper()
	if ok, err := sb.Interrupt(context.Background()); ok || err != nil {
		t.Fatalf("Interrupt with nothing running = %v, %v", ok, err)
	}
	run(t, sb, "python", "x = 41")

	m, out, took := interruptWhenStarted(t, sb, &ExecOptions{ID: "py", Language: LanguagePython,
		Code: "import time\nprint('started', flush=True)\ntime.sleep(30)"})
	if m.Status != StatusInterrupted || m.StateReset || m.Error == nil || m.Error.Name != "KeyboardInterrupt" || took > 10*time.Second {
		t.Fatalf("python: %+v %q after %v", m, out, took)
	}
	if m, _ := run(t, sb, "python", "x + 1"); m.Result == nil || *m.Result != "42" || m.StateReset {
		t.Fatalf("the interpreter after the interrupt: %+v", m)
	}

	// The command says "started" from the process that then waits, once
	// its SIGINT handling is in place: with "echo started; sleep 30" the
	// SIGINT can reach sleep between sh's fork and its exec, where sh's
	// handler takes it and exec forgets it, and sh then waits the whole
	// grace for sleep (as a terminal's Ctrl-C can be lost the same way).
	m, out, took = interruptWhenStarted(t, sb, &ExecOptions{ID: "sh", Language: LanguageShell,
		Code: "exec python3 -c 'import time; print(\"started\", flush=True); time.sleep(30); print(\"never\")'"})
	if m.Status != StatusInterrupted || m.ExitCode != 130 || strings.Contains(out, "never") || took > 10*time.Second {
		t.Fatalf("shell: %+v %q after %v", m, out, took)
	}
	if ok, err := sb.Interrupt(context.Background()); ok || err != nil {
		t.Fatalf("Interrupt once the execution ended = %v, %v", ok, err)
	}

	// A SIGINT can be slept through: Python's C handler notes it, and one
	// that lands after the last check before time.sleep waits for the
	// sleep. Ignoring the first SIGINT has the same effect, every time:
	// the stop repeats it, and the cell (or the command) ends long before
	// the grace, the cell with its one KeyboardInterrupt.
	m, _, took = interruptWhenStarted(t, sb, &ExecOptions{ID: "py-lost", Language: LanguagePython,
		Code: "import signal, time\nh = signal.signal(signal.SIGINT, signal.SIG_IGN)\nprint('started', flush=True)\n" +
			"time.sleep(0.5)\nsignal.signal(signal.SIGINT, h)\ntime.sleep(30)"})
	if m.Status != StatusInterrupted || m.StateReset || m.Error == nil || m.Error.Name != "KeyboardInterrupt" || took > 5*time.Second {
		t.Fatalf("python, the first SIGINT lost: %+v after %v", m, took)
	}
	m, out, took = interruptWhenStarted(t, sb, &ExecOptions{ID: "sh-lost", Language: LanguageShell,
		Code: "exec python3 -c 'import signal, time; signal.signal(signal.SIGINT, signal.SIG_IGN); print(\"started\", flush=True); " +
			"time.sleep(0.5); signal.signal(signal.SIGINT, signal.default_int_handler); time.sleep(30); print(\"never\")'"})
	if m.Status != StatusInterrupted || strings.Contains(out, "never") || took > 5*time.Second {
		t.Fatalf("shell, the first SIGINT lost: %+v %q after %v", m, out, took)
	}
}

// interruptWhenStarted runs o and, once its output says "started", calls
// Interrupt from another goroutine. It returns the result, the output and
// how long the execution took.
func interruptWhenStarted(t *testing.T, sb *Sandbox, o *ExecOptions) (*ExecResult, string, time.Duration) {
	t.Helper()
	o.Timeout, o.Grace, o.MaxOutput = time.Minute, 10*time.Second, 1<<20
	var (
		out  strings.Builder
		once sync.Once
		wg   sync.WaitGroup
	)
	t0 := time.Now()
	m, err := sb.Exec(context.Background(), o, func(kind, data string) {
		out.WriteString(data)
		if strings.Contains(out.String(), "started") {
			once.Do(func() {
				wg.Add(1)
				go func() {
					defer wg.Done()
					if ok, err := sb.Interrupt(context.Background()); !ok || err != nil {
						t.Errorf("Interrupt = %v, %v; want true", ok, err)
					}
				}()
			})
		}
	})
	took := time.Since(t0)
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	return m, out.String(), took
}
