package agent

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// TestAgentContexts: each context is an interpreter of its own, started
// in its folder; a start of one that runs starts it afresh; an execution
// in a context the agent lacks starts it (state_reset); a deleted one is
// gone; the default one restarts but is never deleted.
func TestAgentContexts(t *testing.T) { bothSupervisors(t, testAgentContexts) }

func testAgentContexts(t *testing.T, sup string) {
	ra := startAgentOn(t, Files(), false, sup)
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
	if err := ra.conn.Context(ctx, ContextStart, "c1", sub, "", ""); err != nil {
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
	if err := ra.conn.Context(ctx, ContextStart, "c1", sub, "", ""); err != nil {
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
	if err := ra.conn.Context(ctx, ContextDelete, "c1", "", "", ""); err != nil {
		t.Fatal(err)
	}
	if err := ra.conn.Context(ctx, ContextDelete, ContextDefault, "", "", ""); err == nil {
		t.Error("the default context was deleted")
	}
	if err := ra.conn.Context(ctx, ContextStart, ContextDefault, "", "", ""); err != nil {
		t.Fatal(err)
	}
	if got := result(py("", "'x' in globals()")); got != "False" {
		t.Errorf("a restarted default context kept x: %s", got)
	}
	if got := result(py("c2", "1+1")); got != "2" {
		t.Errorf("c2 after the default's restart: %s", got)
	}
}

// TestAgentContextFork: a context started from another is a copy of its
// interpreter (globals, imports, its folder unless given one), diverging
// from then on; the copy answers only its own requests, is reset and
// deleted alone, and can itself be copied.
func TestAgentContextFork(t *testing.T) { bothSupervisors(t, testAgentContextFork) }

func testAgentContextFork(t *testing.T, sup string) {
	ra := startAgentOn(t, Files(), false, sup)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	py := func(c, code string) string {
		t.Helper()
		m, _, _ := ra.exec(t, Request{Language: LanguagePython, Context: c, Code: code})
		if m.Status != StatusOK {
			t.Fatalf("%s: %q: %s %+v", c, code, m.Status, m.Error)
		}
		return result(m)
	}
	py("", "import json\nbig = list(range(100000))\nx = {'n': 1}")
	if err := ra.conn.Context(ctx, ContextStart, "copy", "", ContextDefault, ""); err != nil {
		t.Fatal(err)
	}
	if got := py("copy", "(x['n'], len(big), json.dumps(1))"); got != "(1, 100000, '1')" {
		t.Fatalf("the copy's state: %s", got)
	}
	py("copy", "x['n'] = 2")
	if got := py("", "x['n']"); got != "1" {
		t.Errorf("the source changed with its copy: %s", got)
	}
	sub := filepath.Join(ra.ws, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := ra.conn.Context(ctx, ContextStart, "copy2", sub, "copy", ""); err != nil {
		t.Fatal(err)
	}
	if got := py("copy2", "import os; (x['n'], os.getcwd())"); got != "(2, '"+sub+"')" {
		t.Errorf("a copy of the copy: %s", got)
	}
	// Output goes to the copy's own pipes; a stuck cell resets it alone.
	m, out, _ := ra.exec(t, Request{Language: LanguagePython, Context: "copy", Code: "print('from the copy')"})
	if m.Status != StatusOK || out != "from the copy\n" {
		t.Errorf("the copy's output: %s %q", m.Status, out)
	}
	m, _, _ = ra.exec(t, Request{Language: LanguagePython, Context: "copy", Code: "import time\nwhile True:\n  try: time.sleep(1)\n  except KeyboardInterrupt: pass", Timeout: 0.5, Grace: 0.3})
	if m.Status != StatusTimeout || !m.StateReset {
		t.Fatalf("the copy's stuck cell: %s, state_reset %v", m.Status, m.StateReset)
	}
	if got := py("", "x['n']"); got != "1" {
		t.Errorf("the source after its copy's reset: %s", got)
	}
	if got := py("copy2", "x['n']"); got != "2" {
		t.Errorf("the copy's copy after the copy's reset: %s", got)
	}
	// A copy of a context this sandbox has not started is a copy of an
	// empty one.
	if err := ra.conn.Context(ctx, ContextStart, "copy3", "", "never", ""); err != nil {
		t.Fatal(err)
	}
	if got := py("copy3", "'x' in globals()"); got != "False" {
		t.Errorf("a copy of a context never started: %s", got)
	}
	if err := ra.conn.Context(ctx, ContextDelete, "copy2", "", "", ""); err != nil {
		t.Fatal(err)
	}
	if got := py("", "x['n']"); got != "1" {
		t.Errorf("the source after a copy's delete: %s", got)
	}
}

// TestAgentContextsRefusedByOlderAgents: an agent before protocol 15 would
// run a context's cell in its one interpreter; the Conn sends it none.
func TestAgentContextsRefusedByOlderAgents(t *testing.T) {
	ra := startAgent(t, savedAgent(t, 12), false)
	if err := ra.conn.Context(context.Background(), ContextStart, "c1", "", "", ""); !errors.Is(err, ErrUnsupported) {
		t.Errorf("Context on a v12 agent: %v, want ErrUnsupported", err)
	}
	_, err := ra.conn.Exec(Request{Language: LanguagePython, Context: "c1", Code: "1", Timeout: 5}, 10*time.Second, func(string, string) {}, nil)
	if !errors.Is(err, ErrUnsupported) {
		t.Errorf("Exec in a context on a v12 agent: %v, want ErrUnsupported", err)
	}
}

// TestAgentJavaScript: JavaScript cells run in node (the session's own
// interpreter, or a javascript context's), keep their globals, print, show
// the last expression's value (a promise's, awaited), raise errors with
// their stack; a stuck cell is stopped and its worker started afresh.
func TestAgentJavaScript(t *testing.T) { bothSupervisors(t, testAgentJavaScript) }

func testAgentJavaScript(t *testing.T, sup string) {
	if _, err := exec.LookPath("node"); err != nil {
		t.Fatalf("node is needed (the Makefile's node-deps installs it): %v", err)
	}
	ra := startAgentOn(t, Files(), false, sup)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	js := func(c, code string) (*Message, string) {
		t.Helper()
		m, out, _ := ra.exec(t, Request{Language: LanguageJavaScript, Context: c, Code: code})
		return m, out
	}
	if m, _ := js("", "var x = 20; globalThis.y = 1"); m.Status != StatusOK || m.Language != LanguageJavaScript {
		t.Fatalf("first cell: %s %+v", m.Status, m.Error)
	}
	if m, out := js("", "console.log('hello', x); x + 22"); m.Status != StatusOK || out != "hello 20\n" || result(m) != "42" {
		t.Errorf("state and output: %s %q %s", m.Status, out, result(m))
	}
	if m, _ := js("", "await new Promise(r => setTimeout(() => r('later'), 10))"); result(m) != "'later'" {
		t.Errorf("top-level await: %s %+v", result(m), m.Error)
	}
	if m, _ := js("", "Promise.resolve({a: 1})"); result(m) != "{ a: 1 }" {
		t.Errorf("a promise's value: %s", result(m))
	}
	if m, _ := js("", "null.boom"); m.Status != StatusError || m.Error == nil || m.Error.Name != "TypeError" {
		t.Errorf("an error: %s %+v", m.Status, m.Error)
	}
	// A context of its own: other globals, its folder.
	sub := filepath.Join(ra.ws, "js")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := ra.conn.Context(ctx, ContextStart, "j1", sub, "", LanguageJavaScript); err != nil {
		t.Fatal(err)
	}
	if m, _ := js("j1", "[typeof x, process.cwd()]"); result(m) != "[ 'undefined', '"+sub+"' ]" {
		t.Errorf("a javascript context: %s %+v", result(m), m.Error)
	}
	// A stuck cell: stopped, the worker started afresh.
	m, _, _ := ra.exec(t, Request{Language: LanguageJavaScript, Code: "while (true) {}", Timeout: 0.5, Grace: 0.3})
	if m.Status != StatusTimeout || !m.StateReset {
		t.Fatalf("a stuck cell: %s, state_reset %v", m.Status, m.StateReset)
	}
	if m, _ := js("", "typeof x"); result(m) != "'undefined'" {
		t.Errorf("after the reset: %s", result(m))
	}
	if m, _ := js("j1", "1 + 1"); result(m) != "2" {
		t.Errorf("the context after another's reset: %s", result(m))
	}
}
