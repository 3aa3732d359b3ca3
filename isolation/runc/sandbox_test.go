package runc

import (
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sandboxd/sandboxd/isolation"
	"github.com/sandboxd/sandboxd/isolation/isolationtest"
)

// newTestRuntime is a runtime of runc sandboxes, without user namespaces.
func newTestRuntime(t *testing.T) *isolation.Runtime {
	return isolationtest.NewRuntime(t, "sandboxd-test-runc", map[string]isolation.NewEngine{isolation.RuntimeRunc: New})
}

func startTestSandbox(t *testing.T, r *isolation.Runtime, id string) *isolation.Sandbox {
	return isolationtest.Start(t, r, id)
}

func TestSandboxPersistentPython(t *testing.T) {
	r := newTestRuntime(t)
	sb := startTestSandbox(t, r, "smoke1")
	isolationtest.Run(t, sb, "python", "x = 41")
	m, _ := isolationtest.Run(t, sb, "python", "x + 1")
	if m.Result == nil || *m.Result != "42" {
		t.Fatalf("result = %v, want 42 (%+v)", m.Result, m)
	}
	m, out := isolationtest.Run(t, sb, "shell", "id -u; echo hi >&2; exit 3")
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
	pid, _, err := sb.Container().InitProcess()
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
	pid, _, err := sb.Container().InitProcess()
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
