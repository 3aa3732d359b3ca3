package process

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/containerd/errdefs"
	"golang.org/x/sys/unix"

	"github.com/sandboxd/sandboxd/daemon/sandboxfs"
	"github.com/sandboxd/sandboxd/isolation"
)

// fakeSandbox lists two processes and records signals.
type fakeSandbox struct{ signaled []int }

func (f *fakeSandbox) ID() string { return "s1" }
func (f *fakeSandbox) Spawn(*isolation.ProcessOptions) (*isolation.Process, error) {
	return nil, errdefs.ErrNotImplemented
}
func (f *fakeSandbox) Processes() ([]isolation.ProcessInfo, error) {
	return []isolation.ProcessInfo{{PID: 1, Command: "agent"}, {PID: 7, PPID: 1, Command: "server"}}, nil
}
func (f *fakeSandbox) Signal(pid int, _ unix.Signal) error {
	if pid != 7 {
		return isolation.ErrNoProcess
	}
	f.signaled = append(f.signaled, pid)
	return nil
}

// TestManager drives the processes' calls against a fake sandbox: the
// list marks what this daemon started, signals refuse pid 1 and name a
// missing process, a background process's log and exit are read back, and
// a session that does not run is a conflict.
func TestManager(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	fs := &sandboxfs.FS{Workspace: filepath.Join(base, "ws"), Tmp: filepath.Join(base, "tmp"), UID: os.Getuid(), GID: os.Getgid()}
	for _, d := range []string{fs.Workspace, filepath.Join(fs.Tmp, logsDir)} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(fs.Tmp, logsDir, "7.log"), []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sb := &fakeSandbox{}
	book := &Book{}
	running := true
	m := NewManager(Options{
		Find: func(_ context.Context, id string, _ bool) (*Target, error) {
			if id != "s1" {
				return nil, errdefs.ErrNotFound.WithMessage("no session " + id)
			}
			t := &Target{ID: id, FS: fs, Book: book}
			if running {
				t.Sandbox = sb
			}
			return t, nil
		},
		Now: time.Now,
	})
	ctx := context.Background()

	e := book.add(7)
	ps, err := m.Processes(ctx, "s1")
	if err != nil || len(ps) != 2 || ps[0].Detached || !ps[1].Detached {
		t.Fatalf("Processes = %+v, %v", ps, err)
	}
	if err := m.SignalProcess(ctx, "s1", 1, "TERM"); !errdefs.IsInvalidArgument(err) {
		t.Errorf("signal pid 1: %v", err)
	}
	if err := m.SignalProcess(ctx, "s1", 9, "KILL"); !errdefs.IsNotFound(err) {
		t.Errorf("signal a missing process: %v", err)
	}
	if err := m.SignalProcess(ctx, "s1", 7, "bogus"); !errdefs.IsInvalidArgument(err) {
		t.Errorf("a bad signal: %v", err)
	}
	if err := m.SignalProcess(ctx, "s1", 7, "9"); err != nil || len(sb.signaled) != 1 {
		t.Errorf("signal: %v, %v", err, sb.signaled)
	}

	r, isRunning, exit, err := m.ProcessLogs(ctx, "s1", 7, 2)
	if err != nil || !isRunning || exit != nil {
		t.Fatalf("ProcessLogs = %v, %v, %v", isRunning, exit, err)
	}
	b, _ := io.ReadAll(r)
	r.Close()
	if string(b) != "llo\n" {
		t.Errorf("log from offset 2 = %q", b)
	}
	book.ended(e, 3)
	if r, isRunning, exit, err = m.ProcessLogs(ctx, "s1", 7, 0); err != nil || isRunning || exit == nil || *exit != 3 {
		t.Fatalf("ProcessLogs after the end = %v, %v, %v", isRunning, exit, err)
	}
	r.Close()
	if _, _, _, err := m.ProcessLogs(ctx, "s1", 8, 0); !errdefs.IsNotFound(err) {
		t.Errorf("the log of a process not started in the background: %v", err)
	}

	running = false
	if _, err := m.Processes(ctx, "s1"); !errdefs.IsConflict(err) {
		t.Errorf("Processes of a stopped session: %v", err)
	}
	if _, err := m.Processes(ctx, "s2"); !errdefs.IsNotFound(err) {
		t.Errorf("Processes of an unknown session: %v", err)
	}
}
