package isolation

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sandboxd/sandboxd/cgroups"
	"github.com/sandboxd/sandboxd/internal/testutil"
	"github.com/sandboxd/sandboxd/seccomp"
)

func newTestRuntime(t *testing.T) *Runtime {
	t.Helper()
	testutil.RequiresRoot(t)
	tree, err := cgroups.Setup(context.Background(), "sandboxd-test", false, slog.Default())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := tree.Remove(); err != nil {
			t.Error(err)
		}
	})
	r, err := NewRuntime(Options{StateDir: t.TempDir(), UID: 2000000, GID: 2000000, Seccomp: seccomp.Config{}, Cgroups: tree})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func startTestSandbox(t *testing.T, r *Runtime, id string) *Sandbox {
	t.Helper()
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws")
	if err := os.Mkdir(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	sb, err := r.Start(context.Background(), &Spec{ID: id, Workspace: ws, Tmp: filepath.Join(dir, "tmp"), Limits: Limits{MemoryBytes: 256 << 20, CPUs: 1, Pids: 128}})
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

func run(t *testing.T, sb *Sandbox, lang, code string) (*ExecResult, string) {
	t.Helper()
	var out strings.Builder
	m, err := sb.Exec(context.Background(), &ExecOptions{Language: lang, Code: code, Timeout: 10 * time.Second, MaxOutput: 1 << 20}, func(kind, data string) { out.WriteString(data) })
	if err != nil {
		t.Fatal(err)
	}
	return m, out.String()
}

func TestSandboxPersistentPython(t *testing.T) {
	r := newTestRuntime(t)
	sb := startTestSandbox(t, r, "smoke1")
	run(t, sb, "python", "x = 41")
	m, _ := run(t, sb, "python", "x + 1")
	if m.Result == nil || *m.Result != "42" {
		t.Fatalf("result = %v, want 42 (%+v)", m.Result, m)
	}
	m, out := run(t, sb, "shell", "id -u; echo hi >&2; exit 3")
	if m.ExitCode != 3 || !strings.Contains(out, "2000000") {
		t.Fatalf("shell: %+v %q", m, out)
	}
}

// TestSandboxAlive: Alive is true while the sandbox's first process runs,
// and false the moment it is killed, before the daemon has reaped it.
func TestSandboxAlive(t *testing.T) {
	r := newTestRuntime(t)
	sb := startTestSandbox(t, r, "alive1")
	if !sb.Alive() {
		t.Fatal("a running sandbox is not alive")
	}
	pid, _, err := sb.c.initProcess()
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Second); sb.Alive(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("a killed sandbox is still alive")
		}
	}
	<-sb.Exited()
	if sb.Alive() {
		t.Fatal("an exited sandbox is alive")
	}
}

// TestSandboxAliveKillPending: a sandbox whose init has a SIGKILL it has
// not acted on yet (frozen: cgroup v1's freezer holds it) is not alive.
func TestSandboxAliveKillPending(t *testing.T) {
	r := newTestRuntime(t)
	sb := startTestSandbox(t, r, "alive2")
	pid, _, err := sb.c.initProcess()
	if err != nil {
		t.Fatal(err)
	}
	if err := sb.Freeze(); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if sb.Alive() {
		t.Fatal("a sandbox whose init has a SIGKILL waiting is alive")
	}
	if err := sb.Thaw(); err != nil {
		t.Fatal(err)
	}
	<-sb.Exited()
}
