package daemon

import (
	"context"
	"strings"
	"testing"

	"github.com/containerd/errdefs"

	"github.com/sandboxd/sandboxd/api"
)

// TestUndo: a session made with checkpoints goes back through its last
// executions, its interpreter and /workspace together; no further than
// it keeps; a daemon restart keeps the history, a new sandbox drops it;
// a session without checkpoints refuses.
func TestUndo(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	d := e.start()
	if _, err := d.CreateSession(as(1000), &api.CreateSessionRequest{Checkpoints: 17}); !errdefs.IsInvalidArgument(err) {
		t.Fatalf("checkpoints 17: %v", err)
	}
	s, err := d.CreateSession(as(1000), &api.CreateSessionRequest{Checkpoints: 3})
	if err != nil || s.Checkpoints != 3 {
		t.Fatalf("create: %+v %v", s, err)
	}
	undo := d.State().Undo
	put := func(path, data string) {
		t.Helper()
		if _, err := d.Files().PutFile(as(1000), s.ID, path, strings.NewReader(data)); err != nil {
			t.Fatal(err)
		}
	}
	x := func() string {
		t.Helper()
		r := mustExec(t, d, as(1000), s.ID, "x")
		if r.Result == nil {
			return ""
		}
		return *r.Result
	}
	mustExec(t, d, as(1000), s.ID, "x = 1")
	put("/workspace/a.txt", "one")
	mustExec(t, d, as(1000), s.ID, "x = 2")
	put("/workspace/a.txt", "two")
	put("/workspace/dir/b.txt", "b")
	mustExec(t, d, as(1000), s.ID, "x = 3")
	// Reading x was an execution too: go back over it and "x = 3".
	if got := x(); got != "3" {
		t.Fatalf("x: %q", got)
	}
	if r, err := undo.Undo(as(1000), s.ID, &api.UndoRequest{Steps: 2}); err != nil || r.Undone != 2 {
		t.Fatalf("undo 2: %+v %v", r, err)
	}
	readFile(t, d, s.ID, "/workspace/a.txt", "two")
	if _, err := undo.Undo(as(1000), s.ID, &api.UndoRequest{}); err != nil {
		t.Fatal(err)
	}
	readFile(t, d, s.ID, "/workspace/a.txt", "one")
	if _, _, err := d.Files().OpenFile(as(1000), s.ID, "/workspace/dir/b.txt"); !errdefs.IsNotFound(err) {
		t.Fatalf("a file written since: %v", err)
	}
	if got := x(); got != "1" {
		t.Fatalf("x after two undos: %q", got)
	}
	// It keeps 3: after the read of x, one step is left (before it).
	if _, err := undo.Undo(as(1000), s.ID, &api.UndoRequest{Steps: 3}); !errdefs.IsFailedPrecondition(err) {
		t.Fatalf("undo past what it keeps: %v", err)
	}
	if _, err := undo.Undo(as(1001), s.ID, &api.UndoRequest{}); !errdefs.IsNotFound(err) {
		t.Fatalf("a stranger's undo: %v", err)
	}
	if _, err := undo.Undo(as(1000), s.ID, &api.UndoRequest{Steps: 17}); !errdefs.IsInvalidArgument(err) {
		t.Fatalf("steps 17: %v", err)
	}

	// A daemon restart keeps the history; a new sandbox drops it.
	mustExec(t, d, as(1000), s.ID, "x = 4")
	if err := d.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	d = e.start()
	undo = d.State().Undo
	if _, err := undo.Undo(as(1000), s.ID, &api.UndoRequest{}); err != nil {
		t.Fatalf("undo after a daemon restart: %v", err)
	}
	if got := x(); got != "1" {
		t.Fatalf("x after a restart and an undo: %q", got)
	}
	if _, err := d.RestartSession(as(1000), s.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := undo.Undo(as(1000), s.ID, &api.UndoRequest{}); !errdefs.IsFailedPrecondition(err) {
		t.Fatalf("undo after a restart of the session: %v", err)
	}

	// An agent that parks no copy (an older one): undo refuses to take
	// /workspace back without the interpreter, and says how far it can go.
	mustExec(t, d, as(1000), s.ID, "y = 1")
	box := e.h.box(s.ID)
	box.mu.Lock()
	box.noCopies = true
	box.mu.Unlock()
	mustExec(t, d, as(1000), s.ID, "y = 2")
	mustExec(t, d, as(1000), s.ID, "echo hi > /dev/null")
	if _, err := undo.Undo(as(1000), s.ID, &api.UndoRequest{Steps: 2}); !errdefs.IsFailedPrecondition(err) || !strings.Contains(err.Error(), "can go back 0 executions") {
		t.Fatalf("undo over an execution whose interpreter was not copied: %v", err)
	}

	plain, err := d.CreateSession(as(1000), &api.CreateSessionRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := undo.Undo(as(1000), plain.ID, &api.UndoRequest{}); !errdefs.IsFailedPrecondition(err) {
		t.Fatalf("undo of a session without checkpoints: %v", err)
	}
}
