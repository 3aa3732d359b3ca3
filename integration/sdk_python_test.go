package integration

import (
	"context"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/docs"
)

// systemPython is Debian's python3, the one CI has: the SDK is built and
// tested with it, never with a python3 that PATH may find first (pyenv).
const systemPython = "/usr/bin/python3"

// TestPythonSDK builds the wheel of the Python SDK (contrib/sdk/python)
// offline with Debian's setuptools, installs it into a fresh venv, and runs
// its unittest suite there against a daemon of this tree, with a package
// index in the fake internet for its install test. The tests' sessions are
// theirs to delete: none may be left.
func TestPythonSDK(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("the SDK's source tree is not in the VM: this runs on the host")
	}
	_, index, d := packageIndex(t, "VALUE = 'installed by the python sdk test'\n", "")
	src, err := filepath.Abs("../contrib/sdk/python")
	if err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	// Built from a copy: a build leaves build/ and *.egg-info in its
	// source, and a stale build/ of someone's own would go into the wheel.
	tree := filepath.Join(work, "src")
	copySDK(t, src, tree)
	wheels, venv := filepath.Join(work, "wheels"), filepath.Join(work, "venv")
	vpy := filepath.Join(venv, "bin", "python")

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	python(ctx, t, work, nil, systemPython, "-m", "pip", "wheel", "--no-build-isolation", "--no-deps", "--no-index", "--no-cache-dir", "-w", wheels, tree)
	whl, _ := filepath.Glob(filepath.Join(wheels, "sandboxd-*.whl"))
	if len(whl) != 1 {
		t.Fatalf("wheels built: %v", whl)
	}
	python(ctx, t, work, nil, systemPython, "-m", "venv", venv)
	python(ctx, t, work, nil, vpy, "-m", "pip", "install", "--no-index", "--no-deps", "--no-cache-dir", "--root-user-action=ignore", whl[0])
	// The tests must import the installed package, typed (PEP 561).
	where := python(ctx, t, work, nil, vpy, "-c", "import pathlib, sandboxd; p = pathlib.Path(sandboxd.__file__).parent; print(p, (p / 'py.typed').is_file())")
	if !strings.HasPrefix(where, venv+"/") || !strings.HasSuffix(strings.TrimSpace(where), " True") {
		t.Fatalf("sandboxd imports from %s, want the venv's, with py.typed", where)
	}

	out := python(ctx, t, work, []string{"SANDBOXD_SOCKET=" + d.socket, "SANDBOXD_TEST_INDEX_URL=" + index, "SANDBOXD_TEST_OPENAPI=" + openAPIFile(t, work)},
		vpy, "-m", "unittest", "discover", "-s", filepath.Join(tree, "tests"), "-v")
	// Every test must run: a skip means a test lacked what this one gives.
	skipped := strings.Contains(out, "skipped")
	if skipped || testing.Verbose() {
		t.Log(out)
	}
	if skipped {
		t.Error("the SDK's tests skipped some")
	}
	t.Logf("the SDK's tests: %s", summary(out))
	list, err := d.c.ListSessions(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range list {
		t.Errorf("session %s (labels %v) left by the SDK's tests", s.ID, s.Labels)
	}
	// A drain test that failed midway must not leave the node draining.
	if n, err := d.c.Node(context.Background()); err != nil || n.State != api.NodeReady {
		t.Errorf("the node after the SDK's tests: %+v %v", n, err)
	}
}

// python runs a Python command in dir with the environment given added, and
// returns its output; its output goes to the log when it fails.
func python(ctx context.Context, t *testing.T, dir string, env []string, name string, args ...string) string {
	t.Helper()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	// No host pip configuration (an index, a cache) and no bytecode
	// written beside the sources.
	cmd.Env = append(os.Environ(), "PIP_CONFIG_FILE="+os.DevNull, "PIP_DISABLE_PIP_VERSION_CHECK=1", "PYTHONDONTWRITEBYTECODE=1")
	cmd.Env = append(cmd.Env, env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Logf("%s %s:\n%s", name, strings.Join(args, " "), out)
		t.Fatalf("%s: %v (it needs Debian's python3-venv, python3-setuptools, python3-wheel and python3-pip: make test-deps)", filepath.Base(name), err)
	}
	return string(out)
}

// summary is a test run's closing lines: unittest's ("Ran 41 tests in
// 9.1s", "OK"), or the totals of node --test's TAP ("# pass 60").
func summary(out string) string {
	var keep []string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "Ran ") || strings.HasPrefix(l, "OK") || strings.HasPrefix(l, "FAILED") || tapTotal.MatchString(l) {
			keep = append(keep, strings.TrimPrefix(l, "# "))
		}
	}
	return strings.Join(keep, ", ")
}

// copySDK copies an SDK's sources (Python's or JavaScript's) to dst,
// leaving out what builds, runs and installs leave in them.
func copySDK(t *testing.T, src, dst string) {
	t.Helper()
	skip := func(name string) bool {
		return name == "build" || name == "dist" || name == "__pycache__" || strings.HasSuffix(name, ".egg-info") ||
			name == "node_modules"
	}
	err := filepath.WalkDir(src, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if rel != "." && skip(e.Name()) {
			if e.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		to := filepath.Join(dst, rel)
		if e.IsDir() {
			return os.MkdirAll(to, 0o755)
		}
		if !e.Type().IsRegular() {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(to, b, 0o644)
	})
	if err != nil {
		t.Fatalf("copy the SDK: %v", err)
	}
}

// openAPIFile writes the spec as JSON into dir for the SDKs' tests, which
// check their models against it: the copy of an SDK cannot reach docs/.
func openAPIFile(t *testing.T, dir string) string {
	t.Helper()
	b, err := docs.OpenAPIJSON()
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "openapi.json")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}
