package integration

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sandboxd/sandboxd/api"
)

// restoreFrom is the last commit before the daemon's split into owners
// (issue 31: session state, isolation's own types, the versioned agent,
// daemon/config): the sessions its daemons leave running must be restored
// by this one. In full: a shallow clone fetches it by this name.
const restoreFrom = "ab3c57556c0b06d97e1e28ed77784dc40a7313a8"

// daemonOf builds sandboxd of a commit of this repository's history, with
// the Makefile's tags and flags for bin/sandboxd (its version: the short
// commit), into dist/old/sandboxd-<short commit> (.gitignore leaves dist/
// out) and reuses it from there: the build takes a minute on a cold cache,
// the commit never changes. rm -rf dist/old builds it again.
func daemonOf(t *testing.T, rev string) (exe, version string) {
	t.Helper()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	version = rev[:7]
	out := filepath.Join(root, "dist", "old", "sandboxd-"+version)
	if _, err := os.Stat(out); err == nil {
		return out, version
	}
	src := t.TempDir()
	// A shallow clone lacks the commit: fetch it from origin.
	archive := exec.Command("sh", "-c", `git -C "$2" cat-file -e "$0^{commit}" 2>/dev/null || git -C "$2" fetch -q --depth 1 origin "$0"; git -C "$2" archive "$0" | tar -x -C "$1"`, rev, src, root)
	if b, err := archive.CombinedOutput(); err != nil {
		t.Fatalf("this test builds sandboxd as of commit %s from the git history, which this checkout lacks and could not fetch from origin: %v\n%s", rev, err, b)
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		t.Fatal(err)
	}
	// Built beside and renamed: a build cut short, or another run's at
	// the same time, never leaves half a binary to be reused.
	tmp := fmt.Sprintf("%s.%d.tmp", out, os.Getpid())
	defer os.Remove(tmp)
	build := exec.Command("go", "build", "-tags", "seccomp", "-trimpath",
		"-ldflags", "-X github.com/sandboxd/sandboxd/internal/version.Version="+version, "-o", tmp, "./cmd/sandboxd")
	build.Dir = src
	build.Env = append(os.Environ(), "CGO_ENABLED=1")
	if b, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build sandboxd of %s: %v\n%s", rev, err, b)
	}
	if err := os.Rename(tmp, out); err != nil {
		t.Fatal(err)
	}
	return out, version
}

// TestRestoreSessionsOfAb3c575 runs the daemon of commit ab3c575 with the
// same config as this one, leaves three sessions running in it (one with
// interpreter state, one with a file written through the API, one claimed
// from the warm pool) and stops it as the packaged unit does (SIGTERM),
// then starts this daemon over its database and folders: it restores
// every session running, state and files kept, and goes on managing them.
func TestRestoreSessionsOfAb3c575(t *testing.T) {
	t.Parallel()
	old, oldVersion := daemonOf(t, restoreFrom)
	d := startDaemon(t, "pool_size = 1\n", func(d *daemon) { d.exe = old })
	ctx := context.Background()
	if v := d.info(t).Version; v != oldVersion {
		t.Fatalf("the old daemon reports version %q, want %s", v, oldVersion)
	}
	waitFor(t, func() bool { return d.info(t).Pool.Idle == 1 })
	pooled := d.session(t, &api.CreateSessionRequest{Labels: map[string]string{"from": "pool"}})
	if !createdFrom(d, pooled, "pool") {
		t.Fatalf("session %s did not come from the old daemon's pool:\n%s", pooled, d.log())
	}
	if e := d.py(t, pooled, "y = 'pooled'"); e.Status != api.StatusOK {
		t.Fatal(describe(e))
	}
	plain := d.session(t, &api.CreateSessionRequest{Labels: map[string]string{"from": "old"}})
	if e := d.py(t, plain, "x = 41"); e.Status != api.StatusOK {
		t.Fatal(describe(e))
	}
	files := d.session(t, nil)
	if _, err := d.c.PutFile(ctx, files, "/workspace/kept.txt", strings.NewReader("written by ab3c575\n")); err != nil {
		t.Fatal(err)
	}
	ids := []string{pooled, plain, files}
	pids := map[string][]string{}
	for _, id := range ids {
		if pids[id] = sandboxProcs(t, id); len(pids[id]) == 0 {
			t.Fatalf("session %s of the old daemon has no processes", id)
		}
	}

	d.terminate() // as systemctl stop: the sessions run on
	d.exe = ""
	d.launch()
	if v := d.info(t).Version; v == oldVersion {
		t.Fatalf("the daemon after the restart is still %s", v)
	}
	list, err := d.c.ListSessions(ctx, nil)
	if err != nil || len(list) != len(ids) {
		t.Fatalf("sessions after the restart: %+v %v", list, err)
	}
	for _, s := range list {
		if s.Status != api.StatusRunning {
			t.Fatalf("session %s after the restart: %+v", s.ID, s)
		}
		if !contains(sandboxProcs(t, s.ID), pids[s.ID][0]) {
			t.Fatalf("session %s's sandbox was replaced, not restored", s.ID)
		}
	}
	if e := d.py(t, plain, "x + 1"); result(e) != "42" || e.StateReset {
		t.Fatalf("the interpreter's state: %s", describe(e))
	}
	if e := d.py(t, pooled, "y"); result(e) != "'pooled'" || e.StateReset {
		t.Fatalf("the pooled session's state: %s", describe(e))
	}
	if got := readFile(t, d, files, "/workspace/kept.txt"); got != "written by ab3c575\n" {
		t.Fatalf("the old daemon's file reads %q", got)
	}
	if _, err := d.c.PutFile(ctx, files, "/workspace/new.txt", strings.NewReader("written after\n")); err != nil {
		t.Fatal(err)
	}
	if e := d.sh(t, files, "cat kept.txt new.txt"); e.Stdout != "written by ab3c575\nwritten after\n" {
		t.Fatalf("files old and new: %s", describe(e))
	}
	for _, id := range ids {
		if err := d.c.DeleteSession(ctx, id); err != nil {
			t.Fatalf("delete %s: %v", id, err)
		}
		if left := sandboxProcs(t, id); len(left) != 0 {
			t.Fatalf("deleted session %s left processes %v", id, left)
		}
	}
	if list, err := d.c.ListSessions(ctx, nil); err != nil || len(list) != 0 {
		t.Fatalf("sessions after the deletes: %+v %v", list, err)
	}
	fresh := d.session(t, nil)
	if e := d.py(t, fresh, "2 + 2"); result(e) != "4" {
		t.Fatalf("a new session: %s", describe(e))
	}
}

// createdFrom reports whether the daemon's log says it made the session
// from source ("pool" or "cold").
func createdFrom(d *daemon, id, source string) bool {
	sc := bufio.NewScanner(strings.NewReader(d.log()))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		l := sc.Text()
		if strings.Contains(l, `"session created"`) && strings.Contains(l, `"session":"`+id+`"`) {
			return strings.Contains(l, `"from":"`+source+`"`)
		}
	}
	return false
}

// readFile reads a session's file through the API.
func readFile(t *testing.T, d *daemon, id, path string) string {
	t.Helper()
	r, _, err := d.c.GetFile(context.Background(), id, path)
	if err != nil || r == nil {
		t.Fatalf("read %s: %v", path, err)
	}
	defer r.Close()
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
