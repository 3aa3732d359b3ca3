package agent

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// undoAgent is a running agent of today's files and helpers for the undo
// tests: py runs a cell (with checkpoints) and fails the test unless it
// ends ok, undo takes steps back.
type undoAgent struct {
	*runningAgent
	t   *testing.T
	ctx context.Context
}

func startUndoAgent(t *testing.T, sup string) *undoAgent {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return &undoAgent{startAgentOn(t, Files(), false, sup), t, ctx}
}

// py runs code in context c, parking with checkpoints k, and returns its
// done line.
func (u *undoAgent) py(c, code string, k int) *Message {
	u.t.Helper()
	m, _, _ := u.exec(u.t, Request{Language: LanguagePython, Context: c, Code: code, Checkpoints: k})
	if m.Status != StatusOK {
		u.t.Fatalf("%s: %q: %s %+v", c, code, m.Status, m.Error)
	}
	return m
}

// undo takes context c back steps executions, failing the test on an
// error.
func (u *undoAgent) undo(c string, steps int) {
	u.t.Helper()
	n, err := u.conn.Undo(u.ctx, c, steps)
	if err != nil || n != steps {
		u.t.Fatalf("undo %q %d: %d, %v", c, steps, n, err)
	}
}

// undoRefused checks that an undo of steps in context c is refused, for
// the context keeps only keeps checkpoints.
func (u *undoAgent) undoRefused(c string, steps, keeps int) {
	u.t.Helper()
	want := "keeps " + strconv.Itoa(keeps) + " checkpoints"
	if n, err := u.conn.Undo(u.ctx, c, steps); err == nil || !strings.Contains(err.Error(), want) {
		u.t.Fatalf("undo %q %d: %d, %v; want an error saying %q", c, steps, n, err, want)
	}
}

// parked counts the agent's stopped descendants, its parked copies, until
// there are want of them or five seconds pass. SIGSTOP takes effect when
// the copy is next scheduled, which on a loaded host (the race detector,
// tests in parallel) comes after the done line: one look would count a
// copy not yet stopped as none.
func (u *undoAgent) parked(want int) int {
	u.t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		n := u.stopped()
		if n == want || time.Now().After(deadline) {
			return n
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// stopped counts the agent's descendants in state T at one look.
func (u *undoAgent) stopped() int {
	u.t.Helper()
	type proc struct {
		ppid  int
		state byte
	}
	procs := map[int]proc{}
	ents, err := os.ReadDir("/proc")
	if err != nil {
		u.t.Fatal(err)
	}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+2:]))
		if len(f) < 2 {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		procs[pid] = proc{ppid, f[0][0]}
	}
	n := 0
	for _, p := range procs {
		if p.state != 'T' {
			continue
		}
		for a := p.ppid; a > 1; a = procs[a].ppid {
			if a == u.pong.PID {
				n++
				break
			}
		}
	}
	return n
}

// TestAgentUndo: each execution with checkpoints parks the interpreter as
// it was before it, and undo puts those back one by one, until none is
// left; a shell execution parks nothing.
func TestAgentUndo(t *testing.T) { bothSupervisors(t, testAgentUndo) }

func testAgentUndo(t *testing.T, sup string) {
	u := startUndoAgent(t, sup)
	if m := u.py("", "x = 1", 0); m.Checkpoint {
		t.Error("an execution without checkpoints parked one")
	}
	for _, code := range []string{"x = 2", "x = 3"} {
		if m := u.py("", code, 2); !m.Checkpoint {
			t.Fatalf("%q with checkpoints: no checkpoint", code)
		}
	}
	if m, _, _ := u.exec(t, Request{Language: LanguageShell, Code: "true", Checkpoints: 2}); m.Status != StatusOK || m.Checkpoint {
		t.Errorf("a shell execution: %s, checkpoint %v", m.Status, m.Checkpoint)
	}
	if n := u.parked(2); n != 2 {
		t.Errorf("%d parked copies, want 2", n)
	}
	for _, want := range []string{"2", "1"} {
		u.undo("", 1)
		if got := result(u.py("", "x", 0)); got != want {
			t.Fatalf("after undo, x = %s, want %s", got, want)
		}
	}
	u.undoRefused("", 1, 0)
	if n := u.parked(0); n != 0 {
		t.Errorf("%d parked copies after every undo, want 0", n)
	}
	// The interpreter put back runs on as any other.
	if got := result(u.py("", "x + 41", 0)); got != "42" {
		t.Errorf("x + 41 = %s", got)
	}
}

// TestAgentUndoKeepsTheNewest: an execution keeps its context's newest
// checkpoints only, the older ones killed.
func TestAgentUndoKeepsTheNewest(t *testing.T) { bothSupervisors(t, testAgentUndoKeepsTheNewest) }

func testAgentUndoKeepsTheNewest(t *testing.T, sup string) {
	u := startUndoAgent(t, sup)
	for _, code := range []string{"y = 1", "y = 2", "y = 3"} {
		u.py("", code, 2)
	}
	if n := u.parked(2); n != 2 {
		t.Errorf("%d parked copies, want 2", n)
	}
	u.undoRefused("", 3, 2)
	if got := result(u.py("", "y", 0)); got != "3" {
		t.Fatalf("a refused undo changed y: %s", got)
	}
	u.undo("", 2)
	if got := result(u.py("", "y", 0)); got != "1" {
		t.Fatalf("after undo 2, y = %s, want 1", got)
	}
	u.undoRefused("", 1, 0)
	if n := u.parked(0); n != 0 {
		t.Errorf("%d parked copies after undo 2, want 0", n)
	}
}

// TestAgentUndoAfterAReset: a cell the interrupt cannot stop has its
// worker killed and started afresh, and its parked copy outlives that:
// undo puts back the state before the cell.
func TestAgentUndoAfterAReset(t *testing.T) { bothSupervisors(t, testAgentUndoAfterAReset) }

func testAgentUndoAfterAReset(t *testing.T, sup string) {
	u := startUndoAgent(t, sup)
	u.py("", "z = 1", 0)
	m, _, _ := u.exec(t, Request{Language: LanguagePython, Checkpoints: 1, Timeout: 0.5, Grace: 0.3,
		Code: "z = 2\nimport time\nwhile True:\n  try: time.sleep(1)\n  except KeyboardInterrupt: pass"})
	if m.Status != StatusTimeout || !m.StateReset || !m.Checkpoint {
		t.Fatalf("the stuck cell: %s, state_reset %v, checkpoint %v", m.Status, m.StateReset, m.Checkpoint)
	}
	if got := result(u.py("", "'z' in globals()", 0)); got != "False" {
		t.Fatalf("the reset kept z: %s", got)
	}
	u.undo("", 1)
	if got := result(u.py("", "z", 0)); got != "1" {
		t.Fatalf("after undo, z = %s, want 1", got)
	}
}

// TestAgentUndoSpareOfAStop: a cell stopped by its timeout, whose
// leftovers the stop kills, leaves its parked copy alone. (Outside a
// sandbox's PID 1 the stop kills no leftover; test_agent.py checks the
// copies are among what it spares.)
func TestAgentUndoSpareOfAStop(t *testing.T) { bothSupervisors(t, testAgentUndoSpareOfAStop) }

func testAgentUndoSpareOfAStop(t *testing.T, sup string) {
	u := startUndoAgent(t, sup)
	// The imports first, and a timeout that leaves the cell time to start
	// its process on a loaded host (CI once stopped it before p was set).
	u.py("", "w = 1\nimport subprocess, time", 0)
	m, _, _ := u.exec(t, Request{Language: LanguagePython, Checkpoints: 1, Timeout: 1.5, Grace: 10,
		Code: "w = 2\np = subprocess.Popen(['sleep', '5'], start_new_session=True)\ntime.sleep(60)"})
	if m.Status != StatusTimeout || m.StateReset || !m.Checkpoint {
		t.Fatalf("the stopped cell: %s, state_reset %v, checkpoint %v", m.Status, m.StateReset, m.Checkpoint)
	}
	if m, _, _ := u.exec(t, Request{Language: LanguageShell, Code: "sleep 60", Timeout: 0.3}); m.Status != StatusTimeout {
		t.Fatalf("a stopped shell command: %s", m.Status)
	}
	u.py("", "p.kill(); p.wait()", 0)
	if n := u.parked(1); n != 1 {
		t.Errorf("%d parked copies after the stops, want 1", n)
	}
	u.undo("", 1)
	if got := result(u.py("", "w", 0)); got != "1" {
		t.Fatalf("after undo, w = %s, want 1", got)
	}
}

// TestAgentUndoContexts: each context keeps its own checkpoints; undo of
// several steps at once; a context's start or delete kills its parked
// copies.
func TestAgentUndoContexts(t *testing.T) { bothSupervisors(t, testAgentUndoContexts) }

func testAgentUndoContexts(t *testing.T, sup string) {
	u := startUndoAgent(t, sup)
	sub := filepath.Join(u.ws, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := u.conn.Context(u.ctx, ContextStart, "c", sub, "", ""); err != nil {
		t.Fatal(err)
	}
	u.py("", "v = 'default'", 1)
	for i := 1; i <= 3; i++ {
		u.py("c", "v = "+strconv.Itoa(i), 3)
	}
	u.undoRefused("other", 1, 0)
	u.undo("c", 2)
	if got := result(u.py("c", "import os; (v, os.getcwd())", 0)); got != "(1, '"+sub+"')" {
		t.Fatalf("c after undo 2: %s", got)
	}
	if got := result(u.py("", "v", 0)); got != "'default'" {
		t.Fatalf("the default context after c's undo: %s", got)
	}
	// c keeps 1, default 1.
	if n := u.parked(2); n != 2 {
		t.Errorf("%d parked copies, want 2", n)
	}
	if err := u.conn.Context(u.ctx, ContextStart, "c", sub, "", ""); err != nil {
		t.Fatal(err)
	}
	u.undoRefused("c", 1, 0)
	u.py("c", "v = 5", 2)
	if err := u.conn.Context(u.ctx, ContextDelete, "c", "", "", ""); err != nil {
		t.Fatal(err)
	}
	u.undoRefused("c", 1, 0)
	if n := u.parked(1); n != 1 {
		t.Errorf("%d parked copies after c's delete, want the default's 1", n)
	}
	if err := u.conn.Context(u.ctx, ContextStart, ContextDefault, "", "", ""); err != nil {
		t.Fatal(err)
	}
	u.undoRefused(ContextDefault, 1, 0)
	if n := u.parked(0); n != 0 {
		t.Errorf("%d parked copies after the default's restart, want 0", n)
	}
}

// TestAgentUndoRefusedByOlderAgents: an agent before protocol 17 parks
// nothing and knows no undo; the Conn sends it none.
func TestAgentUndoRefusedByOlderAgents(t *testing.T) {
	ra := startAgent(t, savedAgent(t, 16), false)
	if _, err := ra.conn.Undo(context.Background(), "", 1); !errors.Is(err, ErrUnsupported) {
		t.Errorf("Undo on a v16 agent: %v, want ErrUnsupported", err)
	}
	if m, _, _ := ra.exec(t, Request{Language: LanguagePython, Code: "1", Checkpoints: 2}); m.Status != StatusOK || m.Checkpoint {
		t.Errorf("an execution with checkpoints on a v16 agent: %s, checkpoint %v", m.Status, m.Checkpoint)
	}
}

// TestAgentUndoJavaScript: node workers do not fork, so a JavaScript cell
// parks nothing, and its execution runs as without checkpoints.
func TestAgentUndoJavaScript(t *testing.T) { bothSupervisors(t, testAgentUndoJavaScript) }

func testAgentUndoJavaScript(t *testing.T, sup string) {
	if _, err := exec.LookPath("node"); err != nil {
		t.Fatalf("node is needed (the Makefile's node-deps installs it): %v", err)
	}
	u := startUndoAgent(t, sup)
	m, _, _ := u.exec(t, Request{Language: LanguageJavaScript, Code: "var j = 1; j", Checkpoints: 2})
	if m.Status != StatusOK || result(m) != "1" || m.Checkpoint {
		t.Fatalf("a JavaScript cell with checkpoints: %s %s, checkpoint %v", m.Status, result(m), m.Checkpoint)
	}
	u.undoRefused("", 1, 0)
	if n := u.parked(0); n != 0 {
		t.Errorf("%d parked copies, want 0", n)
	}
}
