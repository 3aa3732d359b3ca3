package mcpgateway

import (
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/containerd/errdefs"

	"github.com/sandboxd/sandboxd/daemon/config"
)

// TestFolders: a session granted no servers has no folder and opens
// nothing; an unknown server is an invalid argument; Reconcile removes
// the folders of sessions it is told are gone and keeps the others.
func TestFolders(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	cfg := config.MCP{Servers: map[string]config.MCPServer{"tools": {Command: []string{"/bin/true"}, Tools: []string{"echo"}}}}
	g := New(cfg, root, slog.New(slog.DiscardHandler), func(Call) {})
	t.Cleanup(g.Shutdown)

	if d := g.Dir("s1", nil); d != "" {
		t.Errorf("Dir without servers = %q", d)
	}
	if d := g.Dir("s1", []string{"tools"}); d != filepath.Join(root, "s1") {
		t.Errorf("Dir = %q", d)
	}
	if err := g.OpenSession("s1", nil, Owner{}); err != nil {
		t.Errorf("OpenSession without servers: %v", err)
	}
	if ents, _ := os.ReadDir(root); len(ents) != 0 {
		t.Errorf("OpenSession without servers made %d folders", len(ents))
	}
	if err := g.CheckGrant([]string{"nope"}); !errdefs.IsInvalidArgument(err) {
		t.Errorf("CheckGrant of an unknown server: %v", err)
	}
	if err := g.CheckGrant([]string{"tools"}); err != nil {
		t.Errorf("CheckGrant: %v", err)
	}

	for _, id := range []string{"kept", "gone"} {
		if err := os.MkdirAll(filepath.Join(root, id), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	g.Reconcile(func(id string) bool { return id == "kept" })
	if _, err := os.Stat(filepath.Join(root, "kept")); err != nil {
		t.Errorf("a known session's folder: %v", err)
	}
	if _, err := os.Stat(filepath.Join(root, "gone")); !os.IsNotExist(err) {
		t.Errorf("an orphan's folder: %v", err)
	}
	if err := g.RemoveSession("kept"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "kept")); !os.IsNotExist(err) {
		t.Errorf("a removed session's folder: %v", err)
	}
}
