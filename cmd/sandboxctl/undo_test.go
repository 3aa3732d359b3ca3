package main

import (
	"strings"
	"testing"

	"github.com/sandboxd/sandboxd/api"
)

// TestUndoAndVolumeUpdate runs undo, create --checkpoints and volume
// update against a stand-in and checks what each asked and printed.
func TestUndoAndVolumeUpdate(t *testing.T) {
	f := newFakeDaemon(t, map[string]any{
		"POST /v1/sessions/s1/undo": api.UndoResult{Undone: 2},
		"POST /v1/sessions":         api.Session{ID: "aaaa0000aaaa0000", Checkpoints: 3},
		"PATCH /v1/volumes/data":    api.Volume{Name: "data"},
	})
	for _, c := range []struct {
		args  []string
		asked string
		body  string
		out   string
	}{
		{[]string{"undo", "s1", "--steps", "2"}, "POST /v1/sessions/s1/undo", `{"steps":2}`, "went back 2 executions\n"},
		{[]string{"create", "--checkpoints", "3"}, "POST /v1/sessions", `{"checkpoints":3}`, ""},
		{[]string{"volume", "update", "data", "--share-with", "1001,1002"}, "PATCH /v1/volumes/data", `{"shared_with":[1001,1002]}`, ""},
		{[]string{"volume", "update", "data", "--no-sharing"}, "PATCH /v1/volumes/data", `{"shared_with":[]}`, ""},
	} {
		out, err := f.run(t, c.args...)
		if err != nil {
			t.Fatalf("%q: %v", c.args, err)
		}
		asked, body := f.last()
		if asked != c.asked || strings.TrimSpace(body) != c.body {
			t.Errorf("%q asked %s %s, want %s %s", c.args, asked, body, c.asked, c.body)
		}
		if c.out != "" && out != c.out {
			t.Errorf("%q printed %q, want %q", c.args, out, c.out)
		}
	}
	if _, err := f.run(t, "volume", "update", "data"); err == nil || !strings.Contains(err.Error(), "--no-sharing") {
		t.Errorf("volume update with nothing to change: %v", err)
	}
}
