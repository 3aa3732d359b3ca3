package mcpserver

import (
	"strings"
	"testing"
)

// TestUndoTool: create_session passes checkpoints and shows them; undo
// goes back one step by default and more when asked, answers how many;
// the daemon's refusals (no checkpoints, more than kept, steps out of
// range) reach the model as errors.
func TestUndoTool(t *testing.T) {
	f, c := newFakeDaemon(t)
	cs := connect(t, New(c, Options{}))
	_, text, out := call(t, cs, "create_session", map[string]any{"checkpoints": 3})
	id, _ := out["id"].(string)
	f.mu.Lock()
	s := f.sessions[id]
	f.mu.Unlock()
	if s == nil || s.Checkpoints != 3 || out["checkpoints"] != float64(3) || !strings.Contains(text, "undo can take back its last 3 executions") {
		t.Fatalf("create_session with checkpoints: %q %v (%+v)", text, out, s)
	}
	for _, code := range []string{"x = 1", "del x", "y = 2"} {
		if res, text, _ := call(t, cs, "run_python", map[string]any{"session_id": id, "code": code}); res.IsError {
			t.Fatalf("run_python %q: %s", code, text)
		}
	}

	_, text, out = call(t, cs, "undo", map[string]any{"session_id": id})
	if out["undone"] != float64(1) || out["session_id"] != id || !strings.Contains(text, "went back over its last 1 execution:") {
		t.Fatalf("undo: %q %v", text, out)
	}
	if _, text, out = call(t, cs, "undo", map[string]any{"session_id": id, "steps": 2}); out["undone"] != float64(2) || !strings.Contains(text, "last 2 executions") {
		t.Fatalf("undo of 2: %q %v", text, out)
	}

	for _, tc := range []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"session_id": id}, "keeps 0 checkpoints"},
		{map[string]any{"session_id": id, "steps": 17}, "steps 17"},
		{map[string]any{"session_id": "nope"}, "session nope not found"},
		// The server's own session is made without checkpoints.
		{map[string]any{}, "keeps no checkpoints"},
	} {
		res, text, _ := call(t, cs, "undo", tc.args)
		if !res.IsError || !strings.Contains(text, tc.want) {
			t.Errorf("undo %v: error %v %q, want %q", tc.args, res.IsError, text, tc.want)
		}
	}
}
