package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
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
	t.Parallel()
	eachRuntimeAlsoInVM(t, func(t *testing.T, rt, cfg string) {
		d := startDaemon(t, cfg)
		ctx := context.Background()
		mem := int64(128)
		var ids []string
		n := 3
		if testing.Short() && rt == api.RuntimeRunsc {
			// The VM's runsc (ptrace, emulated) takes ~10 s a session:
			// two show a runsc sandbox's adoption on cgroup v2 (one
			// stopped and started after, the other deleted).
			n = 2
		}
		for i := 0; i < n; i++ {
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
	})
}

// TestExecutionInFlightAtACrash kills the daemon during an execution: the
// code runs to its end in the sandbox, the next daemon records it as
// "lost" saying how it ended, and the next execution sees its effects.
func TestExecutionInFlightAtACrash(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, "")
	ctx := context.Background()
	id := d.session(t, nil)
	d.execInBackground(t, id, "print('begun', flush=True)\nimport time\ntime.sleep(3)\ny = 7")
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
	for _, sum := range list {
		if sum.Status == api.StatusLost {
			if lost, err = d.c.Execution(ctx, id, sum.ID); err != nil {
				t.Fatal(err)
			}
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
	t.Parallel()
	eachRuntime(t, func(t *testing.T, rt, cfg string) {
		for _, restart := range []bool{false, true} {
			t.Run(fmt.Sprintf("restart_lost_sessions=%v", restart), func(t *testing.T) {
				d := startDaemon(t, cfg+fmt.Sprintf("restart_lost_sessions = %v\n", restart))
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
	})
}

// TestOrphansAreRemoved plants what a daemon killed in the middle of a
// create or a delete leaves: a sandbox and a session folder with no record.
// The next daemon removes both, and touches nothing of the live session.
func TestOrphansAreRemoved(t *testing.T) {
	t.Parallel()
	eachRuntime(t, func(t *testing.T, rt, cfg string) {
		d := startDaemon(t, cfg)
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
		// And a cgroup of a sandbox that never was, beside the live one's.
		strayCgroup := filepath.Join(sandboxCgroupParent(t, d), "fedcba9876543210")
		if err := os.Mkdir(strayCgroup, 0o755); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Remove(strayCgroup) })
		d.launch()
		waitFor(t, func() bool { return len(sandboxProcs(t, orphan)) == 0 })
		for _, dir := range []string{stray, strayCgroup, filepath.Join(d.base, "data", "sessions", orphan), filepath.Join(d.stateDir(), "sandboxes", orphan)} {
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
	})
}

// TestShutdownStopsSessions checks the switch that makes a daemon stop
// every session when it stops.
func TestShutdownStopsSessions(t *testing.T) {
	t.Parallel()
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

// TestDeleteDuringExecution deletes a session while its code runs: the
// delete does not wait for the code, and nothing of the session is left.
func TestDeleteDuringExecution(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, "")
	ctx := context.Background()
	id := d.session(t, nil)
	done := d.execInBackground(t, id, "print('begun', flush=True)\nimport time\ntime.sleep(60)")
	if err := d.c.DeleteSession(ctx, id); err != nil {
		t.Fatal(err)
	}
	select {
	case e := <-done:
		if e != nil && e.Status == api.StatusOK {
			t.Fatalf("the execution cannot have finished: %s", describe(e))
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the execution did not end with its session")
	}
	if n := len(sandboxProcs(t, id)); n != 0 {
		t.Fatalf("%d processes left", n)
	}
}

// TestCrashDuringCreateAndDelete kills the daemon at points during creates
// and deletes: afterwards every session the daemon lists is whole (running,
// with a sandbox that answers), and nothing exists that no session owns.
func TestCrashDuringCreateAndDelete(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, "", raced)
	ctx := context.Background()
	rounds := 6
	if testing.Short() {
		rounds = 3
	}
	for i := 0; i < rounds; i++ {
		delay := time.Duration(10+i*15) * time.Millisecond
		victim := d.session(t, nil)
		go func() { _ = d.c.DeleteSession(ctx, victim) }()
		go func() { _, _ = d.c.CreateSession(ctx, &api.CreateSessionRequest{}) }()
		time.Sleep(delay)
		d.crash()
		d.launch()
		list, err := d.c.ListSessions(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		known := map[string]bool{}
		for _, s := range list {
			known[s.ID] = true
			if s.Status == api.StatusRunning {
				if e := d.py(t, s.ID, "1 + 1"); result(e) != "2" {
					t.Fatalf("round %d: session %s is listed running but does not answer: %s", i, s.ID, describe(e))
				}
			}
		}
		for _, dir := range []string{filepath.Join(d.base, "data", "sessions"), filepath.Join(d.stateDir(), "sandboxes"), filepath.Join(d.stateDir(), "runc")} {
			ents, _ := os.ReadDir(dir)
			for _, e := range ents {
				if !known[e.Name()] {
					t.Fatalf("round %d (crash after %v): %s/%s belongs to no session", i, delay, dir, e.Name())
				}
			}
		}
		for _, p := range sandboxCgroupProcs(d) {
			if !known[p] {
				t.Fatalf("round %d: processes of unknown sandbox %s run", i, p)
			}
		}
	}
}

// sandboxCgroupProcs lists the sandbox ids of daemon d that have
// processes, found by their cgroup below d's own folder: other daemons'
// sandboxes (tests in parallel) are not its business.
func sandboxCgroupProcs(d *daemon) []string {
	seen := map[string]bool{}
	paths, _ := filepath.Glob("/proc/[0-9]*/cgroup")
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n") {
			parent := "/" + d.cgroupName() + "/"
			if i := strings.LastIndex(line, parent); i >= 0 {
				if id := line[i+len(parent):]; len(id) == 16 {
					seen[id] = true
				}
			}
		}
	}
	var out []string
	for id := range seen {
		out = append(out, id)
	}
	return out
}

// TestRestartWithManySessions measures restart-to-ready with 100 live
// sessions (20 with -short) and checks each is back with its state.
func TestRestartWithManySessions(t *testing.T) {
	t.Parallel()
	n := 100
	if testing.Short() {
		n = 20
	}
	d := startDaemon(t, "max_sessions_per_uid = 200\n")
	ctx := context.Background()
	ids := make([]string, n)
	for i := range ids {
		ids[i] = d.session(t, nil)
		d.py(t, ids[i], fmt.Sprintf("v = %d", i))
	}
	d.terminate()
	start := time.Now()
	d.launch()
	ready := time.Since(start)
	list, err := d.c.ListSessions(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	running := 0
	for _, s := range list {
		if s.Status == api.StatusRunning {
			running++
		}
	}
	for i, id := range ids {
		if e := d.py(t, id, "v"); result(e) != fmt.Sprint(i) {
			t.Fatalf("session %d after the restart: %s", i, describe(e))
		}
	}
	t.Logf("restart to ready with %d live sessions: %v (%d running after it)", n, ready.Round(time.Millisecond), running)
	if running != n {
		t.Fatalf("%d of %d sessions running after the restart", running, n)
	}
}

// TestGracefulShutdown sends SIGTERM during an execution: the daemon lets
// it finish and answer (within shutdown_grace_s), then stops; the session
// runs on.
func TestGracefulShutdown(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, "")
	id := d.session(t, nil)
	done := d.execInBackground(t, id, "print('begun', flush=True)\nimport time\ntime.sleep(2)\nprint('finished')\nz = 3")
	d.terminate()
	e := <-done
	if e == nil || e.Status != api.StatusOK || !strings.Contains(e.Stdout, "finished") {
		t.Fatalf("the execution in flight must finish and answer: %+v", e)
	}
	d.launch()
	if e := d.py(t, id, "z"); result(e) != "3" {
		t.Fatalf("after a graceful restart: %s", describe(e))
	}
}

// sandboxCgroupParent is the folder daemon d puts sandbox cgroups in, in
// one hierarchy: <own>/sandboxd-<instance> in the pids hierarchy on v1,
// the sibling of the daemon's leaf on v2. The daemon runs in the test's
// cgroup (v1) or moved the test into its leaf (v2).
func sandboxCgroupParent(t *testing.T, d *daemon) string {
	t.Helper()
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.SplitN(line, ":", 3)
		if len(f) != 3 {
			continue
		}
		if f[0] == "0" && f[1] == "" {
			if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err == nil {
				return filepath.Join("/sys/fs/cgroup", filepath.Dir(f[2]), d.cgroupName())
			}
		}
		for _, c := range strings.Split(f[1], ",") {
			if c == "pids" {
				return filepath.Join("/sys/fs/cgroup/pids", f[2], d.cgroupName())
			}
		}
	}
	t.Fatal("no cgroup found for sandboxes")
	return ""
}

// execInBackground starts Python code that prints first, and returns once
// its first output arrived; the execution's answer (nil on an error) comes
// on the channel.
func (d *daemon) execInBackground(t *testing.T, id, code string) <-chan *api.Execution {
	t.Helper()
	started := make(chan struct{})
	done := make(chan *api.Execution, 1)
	go func() {
		var once sync.Once
		e, _ := d.c.Exec(context.Background(), id, &api.ExecRequest{Language: "python", Code: code},
			func(api.Event) { once.Do(func() { close(started) }) })
		done <- e
	}()
	select {
	case <-started:
	case <-time.After(20 * time.Second):
		t.Fatal("the execution did not start")
	}
	return done
}
