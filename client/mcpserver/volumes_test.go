package mcpserver

import (
	"strings"
	"testing"

	"github.com/sandboxd/sandboxd/api"
)

// TestVolumeTools: list_volumes lists them; create_session mounts them.
func TestVolumeTools(t *testing.T) {
	f, c := newFakeDaemon(t)
	cs := connect(t, New(c, Options{}))
	_, text, out := call(t, cs, "list_volumes", map[string]any{})
	if !strings.Contains(text, "data\t1 of 64 MB used") || out["volumes"] == nil {
		t.Fatalf("list_volumes: %q %v", text, out)
	}
	_, _, out = call(t, cs, "create_session", map[string]any{"volumes": []map[string]any{{"name": "data", "path": "/data", "read_only": true}}})
	id, _ := out["id"].(string)
	f.mu.Lock()
	s := f.sessions[id]
	f.mu.Unlock()
	if s == nil || len(s.Volumes) != 1 || s.Volumes[0] != (api.VolumeMount{Name: "data", Path: "/data", ReadOnly: true}) {
		t.Fatalf("create_session's volumes: %+v (out %v)", s, out)
	}
}
