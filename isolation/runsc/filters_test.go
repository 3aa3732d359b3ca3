package runsc

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sandboxd/sandboxd/isolation"
	"github.com/sandboxd/sandboxd/isolation/isolationtest"
)

// TestFiltersPrecompiled: the runsc make builds loads its sandbox's and
// its gofer's seccomp programs precompiled for the options a session runs
// with (packaging/runsc/precompile.go), not compiled at start: a gVisor
// bump whose filter packages no longer take them, or options outside the
// programs gVisor lists, fails here instead of slowing every start.
func TestFiltersPrecompiled(t *testing.T) {
	logs := searchableTempDir(t)
	r, _ := newCheckpointRuntime(t, "--debug", "--debug-log="+logs+"/")
	dir := searchableTempDir(t)
	ws := filepath.Join(dir, "ws")
	if err := os.Mkdir(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	sb, err := r.Start(context.Background(), &isolation.Spec{ID: "filters", Runtime: isolation.RuntimeRunsc, Workspace: ws, Tmp: filepath.Join(dir, "tmp"), IDBase: 1 << 30,
		Limits: isolation.Limits{MemoryBytes: 256 << 20, CPUs: 1, Pids: 256}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sb.Stop() })
	isolationtest.Run(t, sb, "python", "1")

	for _, part := range []string{"boot", "gofer"} {
		files, err := filepath.Glob(filepath.Join(logs, "*."+part+".txt"))
		if err != nil || len(files) == 0 {
			t.Fatalf("no %s log in %s: %v", part, logs, err)
		}
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(b), "Loaded precompiled seccomp instructions") {
				t.Errorf("%s compiled its seccomp filter at start (%s)", part, f)
			}
		}
	}
}
