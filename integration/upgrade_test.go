package integration

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sandboxd/sandboxd/api"
)

// oldRelease is the last commit before instance ids, the versioned agent
// protocol and the store's own records: its daemons' sessions must
// survive an upgrade to this one.
const oldRelease = "4f8120808c5e5472b4c8c0dedfdaa25b0a84d788"

// oldBinaries builds sandboxd and sandboxctl of oldRelease from this
// repository's history (or takes them from SANDBOXD_OLD_BIN, where the
// tests run without Go: the VM).
func oldBinaries(t *testing.T) string {
	t.Helper()
	if dir := os.Getenv("SANDBOXD_OLD_BIN"); dir != "" {
		return dir
	}
	src := t.TempDir()
	// A shallow clone lacks the commit: fetch it from origin.
	archive := exec.Command("sh", "-c", `git -C .. cat-file -e "$0^{commit}" 2>/dev/null || git -C .. fetch -q --depth 1 origin "$0"; git -C .. archive "$0" | tar -x -C "$1"`, oldRelease, src)
	if out, err := archive.CombinedOutput(); err != nil {
		t.Fatalf("the upgrade test builds sandboxd as of commit %s from the git history, which this checkout lacks and could not fetch from origin: %v\n%s", oldRelease, err, out)
	}
	dir := t.TempDir()
	_ = os.Chmod(dir, 0o755)
	for _, name := range []string{"sandboxd", "sandboxctl"} {
		build := exec.Command("go", "build", "-tags", "seccomp", "-o", filepath.Join(dir, name), "./cmd/"+name)
		build.Dir = src
		build.Env = append(os.Environ(), "CGO_ENABLED=1")
		if out, err := build.CombinedOutput(); err != nil {
			t.Fatalf("build %s of %s: %v\n%s", name, oldRelease, err, out)
		}
	}
	return dir
}

// TestUpgradeFrom4f81208 runs a daemon of commit 4f81208, leaves a
// session running in it (its agent speaks protocol 1, its record is of
// schema 2, its sandbox lives where daemons put them before instance ids),
// and starts this daemon over the same data and run dirs: it adopts the
// running session (variables and files kept), reads the old records, and
// goes on managing sessions old and new.
func TestUpgradeFrom4f81208(t *testing.T) {
	t.Parallel()
	old := oldBinaries(t)
	d := startDaemon(t, "", func(d *daemon) { d.binDir = old })
	ctx := context.Background()
	live := d.session(t, &api.CreateSessionRequest{Labels: map[string]string{"from": "old"}})
	if e := d.py(t, live, "x = 41\nopen('kept.txt', 'w').write('yes')"); e.Status != api.StatusOK {
		t.Fatal(describe(e))
	}
	stopped := d.session(t, nil)
	if _, err := d.c.StopSession(ctx, stopped); err != nil {
		t.Fatal(err)
	}
	pids := sandboxProcs(t, live)
	if len(pids) == 0 {
		t.Fatal("the old daemon's session has no processes")
	}
	d.terminate() // sessions run on, as at an upgrade
	d.binDir = ""
	d.launch()
	if !d.legacy() {
		t.Fatalf("a data dir of %s got instance %q, want a legacy one", oldRelease, d.instance())
	}
	s, err := d.c.GetSession(ctx, live)
	if err != nil || s.Status != api.StatusRunning || s.Labels["from"] != "old" {
		t.Fatalf("the old session after the upgrade: %+v %v", s, err)
	}
	if got := sandboxProcs(t, live); !contains(got, pids[0]) {
		t.Fatalf("the session's sandbox was replaced (processes %v, were %v)", got, pids)
	}
	if e := d.py(t, live, "x + 1"); result(e) != "42" || e.StateReset {
		t.Fatalf("the adopted session: %s", describe(e))
	}
	if e := d.exec(t, live, "shell", "cat kept.txt", 10); strings.TrimSpace(e.Stdout) != "yes" {
		t.Fatalf("its files: %s", describe(e))
	}
	execs, err := d.c.Executions(ctx, live, 0)
	if err != nil || len(execs) < 3 {
		t.Fatalf("its history: %d %v", len(execs), err)
	}
	if s, err := d.c.GetSession(ctx, stopped); err != nil || s.Status != api.StatusStopped {
		t.Fatalf("the stopped session: %+v %v", s, err)
	}
	if _, err := d.c.StartSession(ctx, stopped); err != nil {
		t.Fatal(err)
	}
	if e := d.py(t, stopped, "1 + 1"); result(e) != "2" {
		t.Fatalf("the old stopped session, started by the new daemon: %s", describe(e))
	}
	fresh := d.session(t, nil)
	if e := d.py(t, fresh, "2 + 2"); result(e) != "4" {
		t.Fatalf("a new session: %s", describe(e))
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
