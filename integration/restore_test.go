package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/store"
)

// TestSessionsSurviveTheDaemon stops the daemon with SIGTERM, then kills it
// with SIGKILL, with sessions holding interpreter state and files: after
// each start every session runs on, state, files, history and limits intact.
func TestSessionsSurviveTheDaemon(t *testing.T) {
	d := startDaemon(t, "")
	ctx := context.Background()
	mem := int64(128)
	var ids []string
	for i := 0; i < 3; i++ {
		id := d.session(t, &api.CreateSessionRequest{MemoryMB: &mem})
		d.py(t, id, fmt.Sprintf("n = %d\nopen('f.txt', 'w').write('file %d')", i, i))
		d.sh(t, id, "echo tmp > /tmp/t.txt")
		ids = append(ids, id)
	}
	for round, how := range []string{"SIGTERM", "SIGKILL"} {
		if how == "SIGTERM" {
			d.terminate()
		} else {
			d.crash()
		}
		// The sandboxes run on while no daemon is there.
		for _, id := range ids {
			if len(sandboxProcs(t, id)) == 0 {
				t.Fatalf("after %s: session %s has no processes left", how, id)
			}
		}
		d.launch()
		for i, id := range ids {
			s, err := d.c.GetSession(ctx, id)
			if err != nil || s.Status != api.StatusRunning || s.Limits.MemoryMB != mem {
				t.Fatalf("after %s: %+v %v", how, s, err)
			}
			want := fmt.Sprintf("(%d, 'file %d', 'tmp\\n')", i+round+1, i)
			if e := d.py(t, id, "n += 1\nn, open('f.txt').read(), open('/tmp/t.txt').read()"); result(e) != want {
				t.Fatalf("after %s: session %s: %s", how, id, describe(e))
			}
			st, err := d.c.Stats(ctx, id)
			if err != nil || st.MemoryLimitBytes != uint64(mem)<<20 || st.Pids == 0 {
				t.Fatalf("after %s: stats %+v %v", how, st, err)
			}
		}
	}
	// A restored session stops, starts and deletes like any other.
	if _, err := d.c.StopSession(ctx, ids[0]); err != nil {
		t.Fatal(err)
	}
	if len(sandboxProcs(t, ids[0])) != 0 {
		t.Fatal("a stopped restored session left processes")
	}
	if _, err := d.c.StartSession(ctx, ids[0]); err != nil {
		t.Fatal(err)
	}
	if err := d.c.DeleteSession(ctx, ids[1]); err != nil {
		t.Fatal(err)
	}
	if len(sandboxProcs(t, ids[1])) != 0 {
		t.Fatal("a deleted restored session left processes")
	}
}

// TestExecutionInFlightAtACrash kills the daemon during an execution: the
// code runs to its end in the sandbox, the next daemon records it as
// "lost" saying how it ended, and the next execution sees its effects.
func TestExecutionInFlightAtACrash(t *testing.T) {
	d := startDaemon(t, "")
	ctx := context.Background()
	id := d.session(t, nil)
	started := make(chan struct{})
	go func() {
		_, _ = d.c.Exec(ctx, id, &api.ExecRequest{Language: "python", Code: "print('begun', flush=True)\nimport time\ntime.sleep(3)\ny = 7"},
			func(api.Event) {
				select {
				case <-started:
				default:
					close(started)
				}
			})
	}()
	select {
	case <-started:
	case <-time.After(20 * time.Second):
		t.Fatal("the execution did not start")
	}
	d.crash()
	d.launch()
	if e := d.py(t, id, "y"); result(e) != "7" || e.StateReset {
		t.Fatalf("the execution in flight ran to its end: %s", describe(e))
	}
	list, err := d.c.Executions(ctx, id, 10)
	if err != nil {
		t.Fatal(err)
	}
	var lost *api.Execution
	for i := range list {
		if list[i].Status == api.StatusLost {
			lost = &list[i]
		}
	}
	if lost == nil || lost.Error == nil || !strings.Contains(lost.Error.Value, "ended ok") || lost.Language != "python" {
		t.Fatalf("the execution in flight must be recorded as lost, saying how it ended: %+v", list)
	}
}

// TestLostSandboxes kills a session's sandbox while no daemon runs: the
// next daemon marks it failed with the reason (or, with
// restart_lost_sessions, starts it afresh), and removes what is left.
func TestLostSandboxes(t *testing.T) {
	for _, restart := range []bool{false, true} {
		t.Run(fmt.Sprintf("restart_lost_sessions=%v", restart), func(t *testing.T) {
			d := startDaemon(t, fmt.Sprintf("restart_lost_sessions = %v\n", restart))
			ctx := context.Background()
			id := d.session(t, nil)
			d.py(t, id, "x = 1\nopen('kept.txt', 'w').write('kept')")
			d.crash()
			for _, pid := range sandboxProcs(t, id) {
				var n int
				fmt.Sscan(pid, &n)
				_ = syscall.Kill(n, syscall.SIGKILL)
			}
			waitFor(t, func() bool { return len(sandboxProcs(t, id)) == 0 })
			d.launch()
			s, err := d.c.GetSession(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if !restart {
				if s.Status != api.StatusFailed || !strings.Contains(s.Reason, "gone") {
					t.Fatalf("a lost sandbox makes a failed session with a reason: %+v", s)
				}
				if _, err := d.c.StartSession(ctx, id); err != nil {
					t.Fatal(err)
				}
			} else if s.Status != api.StatusRunning {
				t.Fatalf("restart_lost_sessions starts it again: %+v", s)
			}
			if e := d.py(t, id, "open('kept.txt').read(), 'x' in globals()"); result(e) != "('kept', False)" {
				t.Fatalf("a fresh interpreter over the same files: %s", describe(e))
			}
		})
	}
}

// TestOrphansAreRemoved plants what a daemon killed in the middle of a
// create or a delete leaves: a sandbox and a session folder with no record.
// The next daemon removes both, and touches nothing of the live session.
func TestOrphansAreRemoved(t *testing.T) {
	d := startDaemon(t, "")
	ctx := context.Background()
	keep := d.session(t, nil)
	d.py(t, keep, "k = 'kept'")
	orphan := d.session(t, nil)
	d.crash()
	// Forget the orphan's record, as if the daemon died before writing it.
	st, err := store.Open(filepath.Join(d.base, "data", "sandboxd.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.DeleteSession(orphan); err != nil {
		t.Fatal(err)
	}
	st.Close()
	stray := filepath.Join(d.base, "data", "sessions", "0123456789abcdef")
	if err := os.MkdirAll(filepath.Join(stray, "fs", "workspace"), 0o700); err != nil {
		t.Fatal(err)
	}
	d.launch()
	waitFor(t, func() bool { return len(sandboxProcs(t, orphan)) == 0 })
	for _, dir := range []string{stray, filepath.Join(d.base, "data", "sessions", orphan), filepath.Join(d.base, "run", "state", "sandboxes", orphan)} {
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Fatalf("orphan folder %s left: %v", dir, err)
		}
	}
	if _, err := d.c.GetSession(ctx, orphan); err == nil {
		t.Fatal("the orphan came back as a session")
	}
	if e := d.py(t, keep, "k"); result(e) != "'kept'" {
		t.Fatalf("the live session was touched: %s", describe(e))
	}
	if !strings.Contains(d.log(), "removed leftover sandbox") || !strings.Contains(d.log(), "removed orphan session folder") {
		t.Fatalf("what reconcile did must be logged:\n%s", d.log())
	}
}

// TestShutdownStopsSessions checks the switch that makes a daemon stop
// every session when it stops.
func TestShutdownStopsSessions(t *testing.T) {
	d := startDaemon(t, "shutdown_stops_sessions = true\n")
	ctx := context.Background()
	id := d.session(t, nil)
	d.terminate()
	if n := len(sandboxProcs(t, id)); n != 0 {
		t.Fatalf("%d processes of the session run on", n)
	}
	d.launch()
	if s, err := d.c.GetSession(ctx, id); err != nil || s.Status != api.StatusStopped {
		t.Fatalf("after a stopping shutdown: %+v %v", s, err)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for i := 0; i < 500; i++ {
		if cond() {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal("timed out waiting")
}
