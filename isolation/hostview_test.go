package isolation

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/moby/sys/mountinfo"

	"github.com/sandboxd/sandboxd/cgroups"
	"github.com/sandboxd/sandboxd/internal/testutil"
	"github.com/sandboxd/sandboxd/seccomp"
)

// noMountsUnder fails if anything is mounted below dir on the host.
func noMountsUnder(t *testing.T, dir string) {
	t.Helper()
	m, err := mountinfo.GetMounts(mountinfo.PrefixFilter(dir))
	if err != nil {
		t.Fatal(err)
	}
	for _, mi := range m {
		t.Errorf("left mounted on the host: %s", mi.Mountpoint)
	}
}

// newTestRuntime is a runtime without engines (they import this
// package): enough for what is done before and after a sandbox's
// container. isolationtest.NewRuntime is the same with engines.
func newTestRuntime(t *testing.T) *Runtime {
	t.Helper()
	testutil.RequiresRoot(t)
	tree, err := cgroups.Setup(context.Background(), "sandboxd-test", false, slog.Default())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := tree.Remove(); err != nil {
			t.Error(err)
		}
	})
	r, err := NewRuntime(Options{StateDir: t.TempDir(), UID: 2000000, GID: 2000000, Seccomp: seccomp.Config{}, Cgroups: tree})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestCleanupUnmountsView is a daemon that died while a sandbox started,
// its view mounted (twice over, by a second attempt): Cleanup unmounts it
// before it removes the sandbox's folder.
func TestCleanupUnmountsView(t *testing.T) {
	r := newTestRuntime(t)
	p := r.pathsOf("hostview-e5f6")
	for i := 0; i < 2; i++ {
		if _, err := r.mountView(p, r.host, "", false); err != nil {
			t.Fatal(err)
		}
	}
	if m, _ := mountinfo.GetMounts(mountinfo.PrefixFilter(p.dir)); len(m) != 4 {
		t.Fatalf("want the root twice and /etc twice mounted, got %d mounts", len(m))
	}
	if err := r.Cleanup("hostview-e5f6"); err != nil {
		t.Fatal(err)
	}
	noMountsUnder(t, r.stateDir)
	if ents, _ := os.ReadDir(filepath.Join(r.stateDir, "sandboxes")); len(ents) != 0 {
		t.Fatalf("sandbox folders left: %d", len(ents))
	}
	// The shared /etc was never the folder's to remove.
	if _, err := os.Stat(filepath.Join(r.etcDir, "passwd")); err != nil {
		t.Fatal(err)
	}
}
