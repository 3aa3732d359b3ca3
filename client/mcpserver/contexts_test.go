package mcpserver

import (
	"slices"
	"strings"
	"testing"
)

// TestContexts checks create_context (empty and from another), code run
// in a context by run_python, run_shell and start_execution, list_contexts,
// delete_context, and the errors a model reads.
func TestContexts(t *testing.T) {
	f, c := newFakeDaemon(t)
	cs := connect(t, New(c, Options{}))
	_, text, out := call(t, cs, "create_context", map[string]any{"from": "default", "cwd": "sub"})
	sid, cid := out["session_id"], out["context"]
	if sid != "s1" || out["session_created"] != true || cid != "c2" || out["cwd"] != "/workspace/sub" || out["language"] != "python" ||
		!strings.Contains(text, "made session s1") || !strings.Contains(text, "a copy of default") || !strings.Contains(text, `context "c2"`) {
		t.Fatalf("create_context: %q %v", text, out)
	}
	if _, text, out = call(t, cs, "create_context", map[string]any{"language": "shell"}); out["context"] != "c3" || out["language"] != "shell" || out["session_created"] == true {
		t.Fatalf("create_context shell: %q %v", text, out)
	}
	call(t, cs, "run_python", map[string]any{"code": "x = 1", "context": "c2"})
	call(t, cs, "run_python", map[string]any{"code": "x"})
	call(t, cs, "run_shell", map[string]any{"command": "pwd", "context": "c3"})
	if _, _, out = call(t, cs, "start_execution", map[string]any{"code": "slow", "context": "c2"}); out["execution_id"] != "job-slow" {
		t.Fatalf("start_execution in a context: %v", out)
	}
	f.mu.Lock()
	execs := slices.Clone(f.execs)
	f.mu.Unlock()
	if want := []string{"s1/c2:x = 1", "s1:x", "s1/c3:pwd"}; !slices.Equal(execs, want) {
		t.Errorf("executions %q, want %q", execs, want)
	}

	_, text, out = call(t, cs, "list_contexts", nil)
	list, _ := out["contexts"].([]any)
	if len(list) != 3 || out["session_id"] != "s1" || !strings.Contains(text, "3 context(s)") || !strings.Contains(text, "c3\tshell\t/workspace") {
		t.Fatalf("list_contexts: %q %v", text, out)
	}
	if first, _ := list[0].(map[string]any); first["id"] != "default" {
		t.Errorf("list_contexts: default not first: %v", list)
	}

	if _, text, out = call(t, cs, "delete_context", map[string]any{"context": "c2", "session_id": "s1"}); out["deleted"] != true || !strings.Contains(text, "deleted context c2") {
		t.Fatalf("delete_context: %q %v", text, out)
	}
	for _, tc := range []struct {
		tool string
		args map[string]any
		want string
	}{
		{"run_python", map[string]any{"code": "x", "context": "c2"}, "context c2 not found"},
		{"start_execution", map[string]any{"code": "x", "context": "c2"}, "context c2 not found"},
		{"delete_context", map[string]any{"context": "c2"}, "context c2 not found"},
		{"delete_context", map[string]any{"context": "default"}, "never deleted"},
		{"delete_context", map[string]any{"context": ""}, "context is empty"},
		{"create_context", map[string]any{"from": "nope"}, "context nope not found"},
		{"list_contexts", map[string]any{"session_id": "nope"}, "session nope not found"},
	} {
		res, text, _ := call(t, cs, tc.tool, tc.args)
		if !res.IsError || !strings.Contains(text, tc.want) {
			t.Errorf("%s %v: error %v %q, want %q", tc.tool, tc.args, res.IsError, text, tc.want)
		}
	}
}
