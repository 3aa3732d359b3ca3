package hostcheck

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestUnreachable: a folder on the way that others may not search is
// named, with its mode and the fix; the nearest the root wins; folders
// yet to be made are not in the way.
func TestUnreachable(t *testing.T) {
	// Not t.TempDir: its parent is 0700.
	base, err := os.MkdirTemp("", "reach-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	if err := os.Chmod(base, 0o755); err != nil {
		t.Fatal(err)
	}
	open := filepath.Join(base, "open", "data")
	private := filepath.Join(base, "private")
	deeper := filepath.Join(private, "inner")
	for _, d := range []string{open, deeper} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(private, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(deeper, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		dir, blocker string // "": reachable
	}{
		{open, ""},
		{filepath.Join(open, "not-yet", "made"), ""},
		{private, private},
		{filepath.Join(deeper, "run"), private},
	} {
		got := Unreachable(tc.dir)
		switch {
		case tc.blocker == "" && got != "":
			t.Errorf("%s: %q, want reachable", tc.dir, got)
		case tc.blocker != "" && (!strings.Contains(got, tc.blocker+" is mode 0700") || !strings.Contains(got, "chmod o+x "+tc.blocker)):
			t.Errorf("%s: %q, want %s named with its mode and the fix", tc.dir, got, tc.blocker)
		}
	}
	h := Host{DataDir: open, RunDir: filepath.Join(deeper, "run")}
	if r := h.Folders(); r.Status != Fail || !strings.Contains(r.Detail, private) {
		t.Errorf("folders: %+v", r)
	}
	h.RunDir = open
	if r := h.Folders(); r.Status != OK {
		t.Errorf("folders: %+v", r)
	}
}
