package daemon

import (
	"errors"
	"testing"

	"github.com/containerd/errdefs"

	"github.com/sandboxd/sandboxd/api"
)

// TestContexts: a context is an interpreter of its own, listed after the
// default one; executions name it; it survives a daemon restart (name and
// state: the sandbox does), and a new sandbox starts it afresh
// (state_reset); it is deleted, the default one only restarted; another
// user's session has none to see; bad requests lose nothing.
func TestContexts(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	d := e.start()
	s, err := d.CreateSession(as(1000), &api.CreateSessionRequest{})
	if err != nil {
		t.Fatal(err)
	}
	cs := d.State().Contexts
	c, err := cs.CreateContext(as(1000), s.ID, &api.CreateContextRequest{Cwd: "sub"})
	if err != nil {
		t.Fatal(err)
	}
	if c.Language != api.LanguagePython || c.Cwd != "/workspace/sub" || c.ID == "" {
		t.Fatalf("created %+v", c)
	}
	run := func(cid, code string) *api.Execution {
		t.Helper()
		x, err := d.Exec(as(1000), s.ID, &api.ExecRequest{Language: api.LanguagePython, Code: code, Context: cid}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return x
	}
	run("", "x = 1")
	run(c.ID, "x = 2")
	if x := run("", "x"); x.Result == nil || *x.Result != "1" {
		t.Fatalf("default's x: %+v", x.Result)
	}
	if x := run(c.ID, "x"); x.Result == nil || *x.Result != "2" || x.StateReset {
		t.Fatalf("context's x: %+v (reset %v)", x.Result, x.StateReset)
	}
	list, err := cs.Contexts(as(1000), s.ID)
	if err != nil || len(list) != 2 || list[0].ID != api.ContextDefault || list[1].ID != c.ID {
		t.Fatalf("list: %+v %v", list, err)
	}

	// Refused, and nothing changes.
	for name, req := range map[string]*api.CreateContextRequest{
		"language": {Language: "cobol"},
		"cwd":      {Cwd: "/etc"},
	} {
		if _, err := cs.CreateContext(as(1000), s.ID, req); !errdefs.IsInvalidArgument(err) {
			t.Errorf("%s: %v, want invalid argument", name, err)
		}
	}
	// A copy has its source's state and folder, then its own.
	cp, err := cs.CreateContext(as(1000), s.ID, &api.CreateContextRequest{From: c.ID})
	if err != nil || cp.Cwd != c.Cwd {
		t.Fatalf("a copy: %+v %v", cp, err)
	}
	if x := run(cp.ID, "x"); x.Result == nil || *x.Result != "2" {
		t.Fatalf("the copy's x: %+v", x.Result)
	}
	run(cp.ID, "x = 3")
	if x := run(c.ID, "x"); *x.Result != "2" {
		t.Fatalf("the source's x after its copy's change: %s", *x.Result)
	}
	if err := cs.DeleteContext(as(1000), s.ID, cp.ID); err != nil {
		t.Fatal(err)
	}
	for name, req := range map[string]*api.CreateContextRequest{
		"from a shell context": {Language: api.LanguageShell, From: api.ContextDefault},
		"from nothing":         {From: "nope"},
	} {
		if _, err := cs.CreateContext(as(1000), s.ID, req); err == nil {
			t.Errorf("%s: made", name)
		}
	}
	if _, err := d.Exec(as(1000), s.ID, &api.ExecRequest{Language: api.LanguagePython, Code: "1", Context: "nope"}, nil); !errdefs.IsNotFound(err) {
		t.Errorf("exec in no context: %v, want not found", err)
	}
	if _, err := cs.Contexts(as(1001), s.ID); !errdefs.IsNotFound(err) {
		t.Errorf("another user's list: %v, want not found", err)
	}
	if _, err := cs.CreateContext(as(1001), s.ID, &api.CreateContextRequest{}); !errdefs.IsNotFound(err) {
		t.Errorf("another user's create: %v, want not found", err)
	}
	if err := cs.DeleteContext(as(1000), s.ID, api.ContextDefault); !errdefs.IsInvalidArgument(err) {
		t.Errorf("delete default: %v, want invalid argument", err)
	}

	// A shell context gives its folder to shell executions.
	sh, err := cs.CreateContext(as(1000), s.ID, &api.CreateContextRequest{Language: api.LanguageShell, Cwd: "/tmp"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Exec(as(1000), s.ID, &api.ExecRequest{Language: api.LanguagePython, Code: "1", Context: sh.ID}, nil); !errdefs.IsInvalidArgument(err) {
		t.Errorf("python in a shell context: %v, want invalid argument", err)
	}

	// A daemon restart keeps both, and the context's state (its sandbox).
	if err := d.Close(root); err != nil {
		t.Fatal(err)
	}
	d = e.start()
	cs = d.State().Contexts
	if list, _ := cs.Contexts(as(1000), s.ID); len(list) != 3 {
		t.Fatalf("after a restart: %+v", list)
	}
	if x := run(c.ID, "x"); x.Result == nil || *x.Result != "2" {
		t.Fatalf("context's x after a daemon restart: %+v", x.Result)
	}
	// A new sandbox starts it afresh.
	if _, err := d.RestartSession(as(1000), s.ID); err != nil {
		t.Fatal(err)
	}
	if x := run(c.ID, "y = 3"); !x.StateReset {
		t.Errorf("first execution in a context of a new sandbox: state_reset false")
	}
	if _, err := cs.RestartContext(as(1000), s.ID, c.ID); err != nil {
		t.Fatal(err)
	}
	if x := run(c.ID, "y"); x.Status != api.StatusError {
		t.Errorf("y after the context's restart: %s %+v", x.Status, x.Result)
	}
	if err := cs.DeleteContext(as(1000), s.ID, c.ID); err != nil {
		t.Fatal(err)
	}
	if err := cs.DeleteContext(as(1000), s.ID, c.ID); !errdefs.IsNotFound(err) {
		t.Errorf("second delete: %v, want not found", err)
	}
	if list, _ := cs.Contexts(as(1000), s.ID); len(list) != 2 {
		t.Errorf("after a delete: %+v", list)
	}

	// At most maxContexts.
	for range maxContexts - 1 {
		if _, err := cs.CreateContext(as(1000), s.ID, &api.CreateContextRequest{}); err != nil {
			t.Fatal(err)
		}
	}
	_, err = cs.CreateContext(as(1000), s.ID, &api.CreateContextRequest{})
	if !errors.Is(err, errdefs.ErrResourceExhausted) {
		t.Errorf("context %d: %v, want resource exhausted", maxContexts+1, err)
	}
}
