// This file is not sdk_js_test.go: Go reads a _js suffix as GOOS=js and
// would build it for that platform alone.

package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sandboxd/sandboxd/api"
)

// TestJSSDK runs the JavaScript SDK's tests (contrib/sdk/js, node --test)
// against a daemon of this tree, with a package index in the fake internet
// for its install test. They run in a copy of the SDK, where npm ci puts
// its devDependencies (TypeScript, for the test of the type declarations)
// with npm's cache in the test's temporary folder, so nothing is left on
// the host. The tests' sessions are theirs to delete: none may be left.
func TestJSSDK(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("the SDK's source tree is not in the VM: this runs on the host")
	}
	if _, err := exec.LookPath("node"); err != nil {
		t.Fatal("node is not installed: make node-deps (Debian's nodejs and npm)")
	}
	_, index, d := packageIndex(t, "VALUE = 'installed by the js sdk test'\n", "")
	src, err := filepath.Abs("../contrib/sdk/js")
	if err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	// Run from a copy: npm ci writes node_modules into the package, and
	// someone's own node_modules must not stand in for the locked one.
	tree := filepath.Join(work, "src")
	copySDK(t, src, tree)
	// The copy's own test cannot see the Python SDK's tools.json, the one
	// definition of the tools that the JS SDK copies: compare them here.
	canon, err := os.ReadFile("../contrib/sdk/python/src/sandboxd/tools.json")
	if err != nil {
		t.Fatal(err)
	}
	if ours, err := os.ReadFile(filepath.Join(tree, "src", "tools.json")); err != nil || !bytes.Equal(ours, canon) {
		t.Errorf("contrib/sdk/js/src/tools.json is not a copy of contrib/sdk/python/src/sandboxd/tools.json (%v): copy it", err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	if devDependencies(t, tree) {
		nodeTool(ctx, t, tree, nil, "npm", "ci", "--ignore-scripts", "--no-audit", "--no-fund", "--cache", filepath.Join(work, "npm-cache"))
	}
	tests, _ := filepath.Glob(filepath.Join(tree, "test", "*.test.js"))
	if len(tests) == 0 {
		t.Fatalf("no test/*.test.js in %s", src)
	}
	out := nodeTool(ctx, t, tree, []string{"SANDBOXD_SOCKET=" + d.socket, "SANDBOXD_TEST_INDEX_URL=" + index, "SANDBOXD_TEST_OPENAPI=" + openAPIFile(t, work)},
		"node", append([]string{"--test", "--test-reporter=tap"}, tests...)...)
	// Every test must run: a skip means a test lacked what this one gives.
	counts := tapCounts(out)
	skipped := counts["skipped"] != 0 || counts["todo"] != 0 || strings.Contains(out, "# SKIP")
	if skipped || testing.Verbose() {
		t.Log(out)
	}
	if _, ok := counts["skipped"]; !ok {
		t.Error("node --test printed no totals")
	}
	if skipped {
		t.Error("the SDK's tests skipped some")
	}
	if counts["pass"] == 0 {
		t.Error("no test of the SDK passed")
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

// devDependencies tells whether the package in dir has any: npm ci is
// needed only then (the SDK has no dependencies at run time).
func devDependencies(t *testing.T, dir string) bool {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "package.json"))
	if err != nil {
		t.Fatal(err)
	}
	var pkg struct {
		Dependencies    map[string]string `json:"dependencies"`
		DevDependencies map[string]string `json:"devDependencies"`
	}
	if err := json.Unmarshal(b, &pkg); err != nil {
		t.Fatalf("package.json: %v", err)
	}
	if len(pkg.Dependencies) != 0 {
		t.Errorf("the SDK has dependencies at run time: %v", pkg.Dependencies)
	}
	return len(pkg.DevDependencies) != 0
}

// nodeTool runs node or npm in dir with the environment given added, and
// returns its output; its output goes to the log when it fails.
func nodeTool(ctx context.Context, t *testing.T, dir string, env []string, name string, args ...string) string {
	t.Helper()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	// No update check, audit or funding notice: the registry is asked for
	// the locked packages and nothing else.
	cmd.Env = append(os.Environ(), "npm_config_update_notifier=false", "npm_config_audit=false", "npm_config_fund=false", "NO_COLOR=1")
	cmd.Env = append(cmd.Env, env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Logf("%s %s:\n%s", name, strings.Join(args, " "), out)
		t.Fatalf("%s: %v (it needs Debian's nodejs and npm: make node-deps)", name, err)
	}
	return string(out)
}

// tapTotal is one of the totals node --test's TAP reporter ends with.
var tapTotal = regexp.MustCompile(`(?m)^# (tests|suites|pass|fail|cancelled|skipped|todo) (\d+)$`)

// tapCounts is node --test's totals by name ("pass", "skipped", ...).
func tapCounts(out string) map[string]int {
	c := map[string]int{}
	for _, m := range tapTotal.FindAllStringSubmatch(out, -1) {
		n, _ := strconv.Atoi(m[2])
		c[m[1]] = n
	}
	return c
}
