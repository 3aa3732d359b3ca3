package agent

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestAgentContexts: each context is an interpreter of its own, started
// in its folder; a start of one that runs starts it afresh; an execution
// in a context the agent lacks starts it (state_reset); a deleted one is
// gone; the default one restarts but is never deleted.
func TestAgentContexts(t *testing.T) {
	ra := startAgent(t, Files(), false)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sub := filepath.Join(ra.ws, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	py := func(c, code string) *Message {
		t.Helper()
		m, _, _ := ra.exec(t, Request{Language: LanguagePython, Context: c, Code: code})
		if m.Status != StatusOK {
			t.Fatalf("%s: %q: %s %+v", c, code, m.Status, m.Error)
		}
		return m
	}
	py("", "x = 'default'")
	if err := ra.conn.Context(ctx, ContextStart, "c1", sub); err != nil {
		t.Fatal(err)
	}
	py("c1", "x = 'c1'")
	if got := result(py("", "x")); got != "'default'" {
		t.Errorf("default's x = %s, want 'default'", got)
	}
	if got := result(py("c1", "x")); got != "'c1'" {
		t.Errorf("c1's x = %s, want 'c1'", got)
	}
	if got := result(py("c1", "import os; os.getcwd()")); got != "'"+sub+"'" {
		t.Errorf("c1's folder = %s, want %s", got, sub)
	}
	// A context's timeout resets that context only.
	m, _, _ := ra.exec(t, Request{Language: LanguagePython, Context: "c1", Code: "import time\nwhile True:\n  try: time.sleep(1)\n  except KeyboardInterrupt: pass", Timeout: 0.5, Grace: 0.3})
	if m.Status != StatusTimeout || !m.StateReset {
		t.Fatalf("c1's stuck cell: %s, state_reset %v", m.Status, m.StateReset)
	}
	if got := result(py("", "x")); got != "'default'" {
		t.Errorf("after c1's reset, default's x = %s", got)
	}
	if m := py("c1", "'x' in globals()"); result(m) != "False" {
		t.Errorf("c1 kept its state through a reset: %s", result(m))
	}
	// Start afresh.
	py("c1", "y = 1")
	if err := ra.conn.Context(ctx, ContextStart, "c1", sub); err != nil {
		t.Fatal(err)
	}
	if got := result(py("c1", "'y' in globals()")); got != "False" {
		t.Errorf("a restarted context kept y: %s", got)
	}
	// An execution in a context the agent never saw starts it.
	m, _, _ = ra.exec(t, Request{Language: LanguagePython, Context: "c2", ContextCwd: sub, Code: "import os; os.getcwd()"})
	if m.Status != StatusOK || !m.StateReset || result(m) != "'"+sub+"'" {
		t.Errorf("a context the agent lacked: %s, state_reset %v, cwd %s", m.Status, m.StateReset, result(m))
	}
	if err := ra.conn.Context(ctx, ContextDelete, "c1", ""); err != nil {
		t.Fatal(err)
	}
	if err := ra.conn.Context(ctx, ContextDelete, ContextDefault, ""); err == nil {
		t.Error("the default context was deleted")
	}
	if err := ra.conn.Context(ctx, ContextStart, ContextDefault, ""); err != nil {
		t.Fatal(err)
	}
	if got := result(py("", "'x' in globals()")); got != "False" {
		t.Errorf("a restarted default context kept x: %s", got)
	}
	if got := result(py("c2", "1+1")); got != "2" {
		t.Errorf("c2 after the default's restart: %s", got)
	}
}

// TestAgentContextsRefusedByOlderAgents: an agent before protocol 15 would
// run a context's cell in its one interpreter; the Conn sends it none.
func TestAgentContextsRefusedByOlderAgents(t *testing.T) {
	ra := startAgent(t, savedAgent(t, 12), false)
	if err := ra.conn.Context(context.Background(), ContextStart, "c1", ""); !errors.Is(err, ErrUnsupported) {
		t.Errorf("Context on a v12 agent: %v, want ErrUnsupported", err)
	}
	_, err := ra.conn.Exec(Request{Language: LanguagePython, Context: "c1", Code: "1", Timeout: 5}, 10*time.Second, func(string, string) {}, nil)
	if !errors.Is(err, ErrUnsupported) {
		t.Errorf("Exec in a context on a v12 agent: %v, want ErrUnsupported", err)
	}
}
