// Package isolationtest has what the tests of the runtime's engines share:
// running code in a sandbox and interrupting it, the same checks for runc's
// sandboxes and runsc's (as net/http/httptest serves net/http's tests).
package isolationtest

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sandboxd/sandboxd/cgroups"
	"github.com/sandboxd/sandboxd/internal/testutil"
	"github.com/sandboxd/sandboxd/isolation"
	"github.com/sandboxd/sandboxd/seccomp"
)

// NewRuntime is a runtime of the engines given, without user namespaces,
// its sandboxes in cgroup folder name (one a test binary: go test runs
// packages' binaries side by side); it needs root.
func NewRuntime(t *testing.T, name string, engines map[string]isolation.NewEngine) *isolation.Runtime {
	t.Helper()
	testutil.RequiresRoot(t)
	tree, err := cgroups.Setup(context.Background(), name, false, slog.Default())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := tree.Remove(); err != nil {
			t.Error(err)
		}
	})
	r, err := isolation.NewRuntime(isolation.Options{StateDir: t.TempDir(), UID: 2000000, GID: 2000000, Seccomp: seccomp.Config{}, Cgroups: tree,
		Engines: engines})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// Start starts sandbox id of the default runtime (runc) on r, with small
// limits, and stops it when the test ends.
func Start(t *testing.T, r *isolation.Runtime, id string) *isolation.Sandbox {
	t.Helper()
	return StartAs(t, r, id, isolation.User{})
}

// StartAs is Start with its code as user u.
func StartAs(t *testing.T, r *isolation.Runtime, id string, u isolation.User) *isolation.Sandbox {
	t.Helper()
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws")
	if err := os.Mkdir(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	sb, err := r.Start(context.Background(), &isolation.Spec{ID: id, Workspace: ws, Tmp: filepath.Join(dir, "tmp"), Limits: isolation.Limits{MemoryBytes: 256 << 20, CPUs: 1, Pids: 128}, User: u})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := sb.Stop(); err != nil {
			t.Error(err)
		}
	})
	return sb
}

// Run runs code of language lang in sb, and returns its result and
// output; an error fails the test.
func Run(t *testing.T, sb *isolation.Sandbox, lang, code string) (*isolation.ExecResult, string) {
	t.Helper()
	var out strings.Builder
	m, err := sb.Exec(context.Background(), &isolation.ExecOptions{Language: lang, Code: code, Timeout: 10 * time.Second, MaxOutput: 1 << 20}, func(kind, data string) { out.WriteString(data) })
	if err != nil {
		t.Fatal(err)
	}
	return m, out.String()
}

// CheckInterrupt interrupts a Python cell and a shell command in sb: each
// answers interrupted, the interpreter keeps its state.
func CheckInterrupt(t *testing.T, sb *isolation.Sandbox) {
	t.Helper()
	if ok, err := sb.Interrupt(context.Background()); ok || err != nil {
		t.Fatalf("Interrupt with nothing running = %v, %v", ok, err)
	}
	Run(t, sb, "python", "x = 41")

	m, out, took := InterruptWhenStarted(t, sb, &isolation.ExecOptions{ID: "py", Language: isolation.LanguagePython,
		Code: "import time\nprint('started', flush=True)\ntime.sleep(30)"})
	if m.Status != isolation.StatusInterrupted || m.StateReset || m.Error == nil || m.Error.Name != "KeyboardInterrupt" || took > 10*time.Second {
		t.Fatalf("python: %+v %q after %v", m, out, took)
	}
	if m, _ := Run(t, sb, "python", "x + 1"); m.Result == nil || *m.Result != "42" || m.StateReset {
		t.Fatalf("the interpreter after the interrupt: %+v", m)
	}

	// The command says "started" from the process that then waits, once
	// its SIGINT handling is in place: with "echo started; sleep 30" the
	// SIGINT can reach sleep between sh's fork and its exec, where sh's
	// handler takes it and exec forgets it, and sh then waits the whole
	// grace for sleep (as a terminal's Ctrl-C can be lost the same way).
	m, out, took = InterruptWhenStarted(t, sb, &isolation.ExecOptions{ID: "sh", Language: isolation.LanguageShell,
		Code: "exec python3 -c 'import time; print(\"started\", flush=True); time.sleep(30); print(\"never\")'"})
	if m.Status != isolation.StatusInterrupted || m.ExitCode != 130 || strings.Contains(out, "never") || took > 10*time.Second {
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
	m, _, took = InterruptWhenStarted(t, sb, &isolation.ExecOptions{ID: "py-lost", Language: isolation.LanguagePython,
		Code: "import signal, time\nh = signal.signal(signal.SIGINT, signal.SIG_IGN)\nprint('started', flush=True)\n" +
			"time.sleep(0.5)\nsignal.signal(signal.SIGINT, h)\ntime.sleep(30)"})
	if m.Status != isolation.StatusInterrupted || m.StateReset || m.Error == nil || m.Error.Name != "KeyboardInterrupt" || took > 5*time.Second {
		t.Fatalf("python, the first SIGINT lost: %+v after %v", m, took)
	}
	m, out, took = InterruptWhenStarted(t, sb, &isolation.ExecOptions{ID: "sh-lost", Language: isolation.LanguageShell,
		Code: "exec python3 -c 'import signal, time; signal.signal(signal.SIGINT, signal.SIG_IGN); print(\"started\", flush=True); " +
			"time.sleep(0.5); signal.signal(signal.SIGINT, signal.default_int_handler); time.sleep(30); print(\"never\")'"})
	if m.Status != isolation.StatusInterrupted || strings.Contains(out, "never") || took > 5*time.Second {
		t.Fatalf("shell, the first SIGINT lost: %+v %q after %v", m, out, took)
	}
}

// InterruptWhenStarted runs o and, once its output says "started", calls
// Interrupt from another goroutine. It returns the result, the output and
// how long the execution took.
func InterruptWhenStarted(t *testing.T, sb *isolation.Sandbox, o *isolation.ExecOptions) (*isolation.ExecResult, string, time.Duration) {
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
