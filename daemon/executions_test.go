package daemon

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"testing"
	"time"

	"github.com/containerd/errdefs"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/internal/testutil"
)

// TestStartExec: an execution started without waiting answers its id at
// once, is "running" with its output so far, first in the list, and then
// found whole in the history with its metrics, code hash and caller;
// another user sees neither. What exec refuses, StartExec refuses before
// answering an id.
func TestStartExec(t *testing.T) {
	e := newEnv(t, nil)
	d := e.start()
	s := mustCreate(t, d, as(1000))
	done := mustExec(t, d, as(1000), s.ID, "x = 5")
	box := e.h.box(s.ID)

	eid, err := d.StartExec(as(1000), s.ID, &api.ExecRequest{Language: api.LanguagePython, Code: "sleep", TimeoutS: ptr(60.0)})
	if err != nil || eid == "" {
		t.Fatalf("StartExec = %q, %v", eid, err)
	}
	testutil.WaitFor(t, 10*time.Second, box.sleeping, "the execution did not start")
	got, err := d.History().Execution(as(1000), s.ID, eid)
	if err != nil || got.Status != api.StatusRunning || got.Stdout != "sleeping\n" || got.ID != eid {
		t.Fatalf("running: %+v, %v", got, err)
	}
	if _, err := d.History().Execution(as(2000), s.ID, eid); !errdefs.IsNotFound(err) {
		t.Fatalf("another user's: %v, want not found", err)
	}
	list, err := d.History().Executions(as(1000), s.ID, 0)
	if err != nil || len(list) != 2 || list[0].ID != eid || list[0].Status != api.StatusRunning || list[0].ExitCode != nil || list[1].ID != done.ID {
		t.Fatalf("list while running: %+v, %v", list, err)
	}

	if ok, err := d.Interrupt(as(1000), s.ID); !ok || err != nil {
		t.Fatalf("Interrupt = %v, %v", ok, err)
	}
	var ended *api.Execution
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		ended, err = d.History().Execution(as(1000), s.ID, eid)
		if err != nil {
			t.Fatal(err)
		}
		if ended.Status != api.StatusRunning {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the execution did not end")
		}
	}
	sum := sha256.Sum256([]byte("sleep"))
	if ended.Status != api.StatusInterrupted || ended.Stdout != "sleeping\n" || ended.CodeSHA256 != hex.EncodeToString(sum[:]) ||
		ended.CallerUID == nil || *ended.CallerUID != 1000 {
		t.Fatalf("ended: %+v", ended)
	}
	if m := ended.Metrics; m == nil || m.CPUMS != 0.5 || m.MemoryPeakBytes != 8<<20 || m.WallMS != ended.DurationMS {
		t.Fatalf("metrics: %+v", ended.Metrics)
	}
	list, err = d.History().Executions(as(1000), s.ID, 1)
	if err != nil || len(list) != 1 || list[0].ID != eid || list[0].ExitCode == nil || *list[0].ExitCode != 130 ||
		list[0].Metrics == nil || list[0].CodeSHA256 == "" {
		t.Fatalf("list after: %+v, %v", list, err)
	}

	for _, tt := range []struct {
		name string
		req  api.ExecRequest
		want func(error) bool
	}{
		{"no language", api.ExecRequest{Code: "1"}, errdefs.IsInvalidArgument},
		{"bad timeout", api.ExecRequest{Language: api.LanguagePython, Code: "1", TimeoutS: ptr(-1.0)}, errdefs.IsInvalidArgument},
	} {
		if eid, err := d.StartExec(as(1000), s.ID, &tt.req); !tt.want(err) {
			t.Errorf("%s: StartExec = %q, %v", tt.name, eid, err)
		}
	}
	if _, err := d.StartExec(as(2000), s.ID, &api.ExecRequest{Language: api.LanguagePython, Code: "1"}); !errdefs.IsNotFound(err) {
		t.Errorf("another user's session: %v", err)
	}
	if _, err := d.History().Execution(as(1000), s.ID, "nope"); !errdefs.IsNotFound(err) {
		t.Errorf("unknown execution: %v", err)
	}
}

// TestStartExecOutlivesShutdown: a daemon that closes while an execution
// started without waiting runs lets go of it within its grace; nothing
// panics or leaks (the next daemon records how it ended).
func TestStartExecOutlivesShutdown(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	d := e.start()
	s := mustCreate(t, d, as(1000))
	if _, err := d.StartExec(as(1000), s.ID, &api.ExecRequest{Language: api.LanguagePython, Code: "sleep", TimeoutS: ptr(60.0)}); err != nil {
		t.Fatal(err)
	}
	box := e.h.box(s.ID)
	testutil.WaitFor(t, 10*time.Second, box.sleeping, "the execution did not start")
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if err := d.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 20*time.Second {
		t.Fatalf("close took %v", took)
	}
	if _, err := d.StartExec(as(1000), s.ID, &api.ExecRequest{Language: api.LanguagePython, Code: "1"}); err == nil {
		t.Fatal("StartExec after close worked")
	}
}

// TestStartExecIsFoundAtOnce: the id StartExec answers names an execution
// a GET finds straight away, before the goroutine that runs it has been
// scheduled (it was made live there, and a GET in between answered 404).
func TestStartExecIsFoundAtOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	d := e.start()
	s := mustCreate(t, d, as(1000))
	for i := range 50 {
		eid, err := d.StartExec(as(1000), s.ID, &api.ExecRequest{Language: api.LanguagePython, Code: "1"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := d.History().Execution(as(1000), s.ID, eid); err != nil {
			t.Fatalf("execution %d, right after StartExec: %v", i, err)
		}
		testutil.WaitFor(t, 10*time.Second, func() bool {
			x, err := d.History().Execution(as(1000), s.ID, eid)
			return err == nil && x.Status != api.StatusRunning
		}, "execution %d did not end", i)
	}
}
