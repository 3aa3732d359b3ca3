package runsc

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sandboxd/sandboxd/cgroups"
	"github.com/sandboxd/sandboxd/internal/testutil"
	"github.com/sandboxd/sandboxd/isolation"
	"github.com/sandboxd/sandboxd/isolation/isolationtest"
	"github.com/sandboxd/sandboxd/seccomp"
)

// newCheckpointRuntime is a runtime on the runsc make builds (RUNSC_NET:
// Debian 12's has no checkpoint file inside), on systrap, with more global
// runsc flags, and its state folder.
func newCheckpointRuntime(t *testing.T, flags ...string) (*isolation.Runtime, string) {
	t.Helper()
	testutil.RequiresRoot(t)
	if testing.Short() {
		// The VM (cgroup v2, emulated) has Debian's runsc, which cannot
		// checkpoint; a restore starts in the session's cgroup as a
		// create does, which TestRunscCgroup checks there.
		t.Skip("memory snapshots are tested on the host")
	}
	path, err := filepath.Abs("../../dist/runsc/runsc")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("no runsc that checkpoints (%v): make dist/runsc/runsc (make test does)", err)
	}
	tree, err := cgroups.Setup(context.Background(), "sandboxd-test-runsc-"+strings.ToLower(t.Name()), false, slog.Default())
	if err != nil {
		t.Fatal(err)
	}
	state := searchableTempDir(t)
	r, err := isolation.NewRuntime(isolation.Options{StateDir: state, UID: 2000000, GID: 2000000, UserNS: true, Seccomp: seccomp.Config{}, Cgroups: tree,
		Engines: map[string]isolation.NewEngine{isolation.RuntimeRunsc: New(Options{Path: path, Platform: "systrap", Flags: flags})}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := r.Close(); err != nil {
			t.Error(err)
		}
	})
	if !r.CanCheckpoint(isolation.RuntimeRunsc) {
		t.Fatal("the runsc make builds cannot checkpoint")
	}
	return r, state
}

// TestCheckpoint: a sandbox's memory saved while it runs on, and two
// sandboxes restored from it, each in its own folders and id block: both
// have the interpreter's variables, draw random numbers of their own,
// and go their own ways; the source runs on. A process started beside
// the interpreter makes the agent refuse, and the sandbox lives on.
func TestCheckpoint(t *testing.T) {
	r, state := newCheckpointRuntime(t)
	dir := searchableTempDir(t)
	start := func(id string, base uint32, memory string) *isolation.Sandbox {
		t.Helper()
		ws := filepath.Join(dir, id)
		if memory != "" {
			// The files of the source at the checkpoint.
			if out, err := exec.Command("cp", "-a", filepath.Join(dir, "snap"), ws).CombinedOutput(); err != nil {
				t.Fatalf("%v: %s", err, out)
			}
		} else if err := os.Mkdir(ws, 0o755); err != nil {
			t.Fatal(err)
		}
		sb, err := r.Start(context.Background(), &isolation.Spec{ID: "ckpt-" + id, Runtime: isolation.RuntimeRunsc, Workspace: ws, Tmp: filepath.Join(dir, id+"-tmp"), IDBase: base,
			Limits: isolation.Limits{MemoryBytes: 256 << 20, CPUs: 1, Pids: 256}, Memory: memory})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = sb.Stop() })
		return sb
	}
	src := start("src", 1<<30, "")
	isolationtest.Run(t, src, "python", "import random\nx = 41\nbuf = bytearray(50 << 20)\nf = open('/workspace/log', 'a')\nf.write('one\\n'); f.flush()")

	p, err := src.Spawn(&isolation.ProcessOptions{Argv: []string{"sleep", "60"}})
	if err != nil {
		t.Fatal(err)
	}
	var refused *isolation.CheckpointRefusedError
	if err := src.Checkpoint(context.Background(), filepath.Join(dir, "refused"), nil); !errors.As(err, &refused) {
		t.Fatalf("checkpoint with a process beside the interpreter: %v", err)
	}
	_ = p.Kill()
	_, _ = p.Wait()
	p.Close()
	if m, _ := isolationtest.Run(t, src, "python", "x"); m.Result == nil || *m.Result != "41" {
		t.Fatalf("after a refused checkpoint: %+v", m)
	}

	image := filepath.Join(dir, "image")
	err = src.Checkpoint(context.Background(), image, func() error {
		// Paused through the control socket, not by runsc's commands:
		// the mark of a resume owed is there.
		if _, err := os.Stat(filepath.Join(state, "sandboxes", "ckpt-src", pausedMark)); err != nil {
			return fmt.Errorf("paused by the control socket? %w", err)
		}
		if out, err := exec.Command("cp", "-a", filepath.Join(dir, "src"), filepath.Join(dir, "snap")).CombinedOutput(); err != nil {
			return fmt.Errorf("%v: %s", err, out)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if m, _ := isolationtest.Run(t, src, "python", "x += 1; f.write('src\\n'); f.flush(); x"); m.Result == nil || *m.Result != "42" {
		t.Fatalf("the source after its checkpoint: %+v", m)
	}
	if _, err := os.Stat(filepath.Join(state, "sandboxes", "ckpt-src", pausedMark)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the mark of a resume owed is left after the resume: %v", err)
	}
	a := start("a", 1<<30+1<<16, image)
	b := start("b", 1<<30+2<<16, image)
	if m, _ := isolationtest.Run(t, a, "python", "x"); m.Result == nil || *m.Result != "41" {
		t.Fatalf("restored: %+v", m)
	}
	isolationtest.Run(t, b, "python", "x = 'b'; f.write('b\\n'); f.flush()")
	if m, _ := isolationtest.Run(t, a, "python", "(x, len(buf), open('/workspace/log').read())"); m.Result == nil || *m.Result != "(41, 52428800, 'one\\n')" {
		t.Fatalf("a after b changed: %+v", m)
	}
	ra, _ := isolationtest.Run(t, a, "python", "random.random()")
	rb, _ := isolationtest.Run(t, b, "python", "random.random()")
	if ra.Result == nil || rb.Result == nil || *ra.Result == *rb.Result {
		t.Fatalf("two restored copies drew the same number: %v %v", ra.Result, rb.Result)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "b", "log")); string(got) != "one\nb\n" {
		t.Fatalf("b's file: %q", got)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "src", "log")); string(got) != "one\nsrc\n" {
		t.Fatalf("the source's file: %q", got)
	}
	// A restored sandbox checkpoints in its turn, here by runsc's
	// commands (a runsc whose control socket the daemon does not find).
	controlSockets = false
	err = a.Checkpoint(context.Background(), filepath.Join(dir, "image2"), func() error {
		if _, err := os.Stat(filepath.Join(state, "sandboxes", "ckpt-a", pausedMark)); !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("paused by runsc's commands, yet the mark is there: %v", err)
		}
		return nil
	})
	controlSockets = true
	if err != nil {
		t.Fatal(err)
	}
	isolationtest.Run(t, a, "python", "x = 'a'; open('/tmp/h', 'w').write('h')")

	// Hibernated: the sandbox ends; one started from its image in its
	// folders goes on.
	if err := a.Hibernate(context.Background(), filepath.Join(dir, "hibernated"), func() error { return nil }); err != nil {
		t.Fatal(err)
	}
	select {
	case <-a.Exited():
	case <-time.After(10 * time.Second):
		t.Fatal("a hibernated sandbox runs on")
	}
	if err := a.Stop(); err != nil {
		t.Fatal(err)
	}
	woken, err := r.Start(context.Background(), &isolation.Spec{ID: "ckpt-a", Runtime: isolation.RuntimeRunsc, Workspace: filepath.Join(dir, "a"), Tmp: filepath.Join(dir, "a-tmp"), IDBase: 1<<30 + 1<<16,
		Limits: isolation.Limits{MemoryBytes: 256 << 20, CPUs: 1, Pids: 256}, Memory: filepath.Join(dir, "hibernated")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = woken.Stop() })
	if m, _ := isolationtest.Run(t, woken, "python", "(x, open('/tmp/h').read(), len(buf))"); m.Result == nil || *m.Result != "('a', 'h', 52428800)" {
		t.Fatalf("woken: %+v", m)
	}
}

// TestResumeOwed: a sandbox a killed daemon left paused through its
// control socket, with the mark, is resumed by the next daemon's Restore
// (resumeOwed), and the mark removed; without the mark, nothing is
// resumed (a resume of a kernel not paused is a panic in gVisor).
func TestResumeOwed(t *testing.T) {
	r, state := newCheckpointRuntime(t)
	ws := searchableTempDir(t)
	sb, err := r.Start(context.Background(), &isolation.Spec{ID: "owed", Runtime: isolation.RuntimeRunsc, Workspace: ws, Tmp: filepath.Join(ws, "tmp"), IDBase: 1 << 30,
		Limits: isolation.Limits{MemoryBytes: 256 << 20, CPUs: 1, Pids: 256}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sb.Stop() })
	isolationtest.Run(t, sb, "python", "x = 1")
	rs := &runsc{root: filepath.Join(state, "runsc")}
	dir := filepath.Join(state, "sandboxes", "owed")
	if err := rs.resumeOwed("owed", dir); err != nil {
		t.Fatal(err)
	}
	if err := rs.control(context.Background(), "owed", ctlPause, nil); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, pausedMark), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := rs.resumeOwed("owed", dir); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, pausedMark)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the mark is left: %v", err)
	}
	if m, _ := isolationtest.Run(t, sb, "python", "x"); m.Result == nil || *m.Result != "1" {
		t.Fatalf("after the resume owed: %+v", m)
	}
}
