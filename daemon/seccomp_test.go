package daemon

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"github.com/sandboxd/sandboxd/seccomp"
)

func TestDeniedLogIsRateLimited(t *testing.T) {
	var buf bytes.Buffer
	counted := 0
	l := newDeniedLog(slog.New(slog.NewTextHandler(&buf, nil)), func(string) { counted++ })
	for i := 0; i < 100; i++ {
		l.report(seccomp.Violation{Sandbox: "a", Syscall: "mount", Pid: 7})
	}
	l.report(seccomp.Violation{Sandbox: "b", Syscall: "bpf"})
	if counted != 101 {
		t.Fatalf("every refusal is counted: %d", counted)
	}
	if n := strings.Count(buf.String(), "session=a"); n != l.burst {
		t.Fatalf("session a: %d lines, want %d", n, l.burst)
	}
	if !strings.Contains(buf.String(), "session=b syscall=bpf") {
		t.Fatal("another session has its own budget")
	}
	// A new window says how many were left out.
	l.sessions["a"].start = l.sessions["a"].start.Add(-2 * 60e9)
	l.report(seccomp.Violation{Sandbox: "a", Syscall: "mount"})
	if !strings.Contains(buf.String(), "not_logged=80") {
		t.Fatalf("missing summary:\n%s", buf.String())
	}
	l.forget("a")
	if _, ok := l.sessions["a"]; ok {
		t.Fatal("forget")
	}
}
