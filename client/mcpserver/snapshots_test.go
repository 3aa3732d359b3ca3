package mcpserver

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/sandboxd/sandboxd/api"
)

// TestSnapshotTools: snapshot_session keeps a session (the server's own
// when none is named), list_snapshots lists it, create_session starts from
// it (without the server's defaults the daemon would refuse beside it),
// fork_session answers the new ids, which are the server's to delete; and
// the errors a model reads.
func TestSnapshotTools(t *testing.T) {
	f, c := newFakeDaemon(t)
	memory := int64(512)
	s := New(c, Options{Create: api.CreateSessionRequest{Template: "data", MemoryMB: &memory, Labels: map[string]string{"team": "a"}}})
	cs := connect(t, s)

	_, text, out := call(t, cs, "snapshot_session", map[string]any{"name": "base"})
	if out["id"] != "p1" || out["name"] != "base" || out["session_id"] != "s1" || out["session_created"] != true || out["template"] != "data" ||
		!strings.Contains(text, "made session s1") || !strings.Contains(text, `snapshot p1 ("base") of session s1`) || !strings.Contains(text, `snapshot "base"`) {
		t.Fatalf("snapshot_session: %q %v", text, out)
	}
	_, text, out = call(t, cs, "list_snapshots", map[string]any{})
	if list, _ := out["snapshots"].([]any); len(list) != 1 || !strings.Contains(text, "1 snapshots") || !strings.Contains(text, `p1 ("base")`+"\tof session s1\ttemplate data") {
		t.Fatalf("list_snapshots: %q %v", text, out)
	}

	// From the snapshot: the server's template and memory are not sent
	// (the daemon refuses them beside a snapshot), its labels are.
	_, text, out = call(t, cs, "create_session", map[string]any{"snapshot": "base", "labels": map[string]string{"k": "v"}, "deadline_s": 60})
	id, _ := out["id"].(string)
	f.mu.Lock()
	from, sess := f.snaps.madeFrom[id], f.sessions[id]
	f.mu.Unlock()
	if id != "s2" || from != "p1" || out["template"] != "data" || sess.Labels[LabelKey] != LabelValue || sess.Labels["k"] != "v" || !strings.Contains(text, "created session s2") {
		t.Fatalf("create_session from a snapshot: %q %v (made from %q, %+v)", text, out, from, sess)
	}

	_, text, out = call(t, cs, "fork_session", map[string]any{"session_id": "s1", "count": 2})
	if ids, _ := out["session_ids"].([]any); !slices.Equal(ids, []any{"s3", "s4"}) || out["session_id"] != "s1" || out["session_created"] == true ||
		!strings.Contains(text, "forked session s1 into 2: s3 s4") {
		t.Fatalf("fork_session: %q %v", text, out)
	}
	if _, _, out = call(t, cs, "fork_session", map[string]any{}); !slices.Equal(out["session_ids"].([]any), []any{"s5"}) || out["session_id"] != "s1" {
		t.Fatalf("fork_session of the server's own session: %v", out)
	}
	_, _, out = call(t, cs, "list_sessions", nil)
	for _, v := range out["sessions"].([]any) {
		if so := v.(map[string]any); so["mine"] != true {
			t.Errorf("list_sessions: %v is not the server's", so)
		}
	}

	for _, tc := range []struct {
		tool string
		args map[string]any
		want string
	}{
		{"snapshot_session", map[string]any{"name": "base"}, "snapshot base exists"},
		{"snapshot_session", map[string]any{"session_id": "nope"}, "session nope not found"},
		{"create_session", map[string]any{"snapshot": "nope"}, "snapshot nope not found"},
		{"create_session", map[string]any{"snapshot": "base", "template": "python"}, "takes the snapshot's settings"},
		{"fork_session", map[string]any{"session_id": "s1", "count": 101}, "count 101"},
		{"fork_session", map[string]any{"session_id": "nope"}, "session nope not found"},
	} {
		res, text, _ := call(t, cs, tc.tool, tc.args)
		if !res.IsError || !strings.Contains(text, tc.want) {
			t.Errorf("%s %v: error %v %q, want %q", tc.tool, tc.args, res.IsError, text, tc.want)
		}
	}

	// The forks go with the server's other sessions when it closes.
	s.Close(context.Background())
	f.mu.Lock()
	left := len(f.sessions)
	f.mu.Unlock()
	if left != 0 {
		t.Errorf("%d sessions left after Close", left)
	}
}
