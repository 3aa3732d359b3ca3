package integration

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestFirstContact is issue 35: what a new user meets on a fresh machine
// with the daemon's own flags. A folder the sandboxes cannot enter (mktemp
// -d makes it 0700) stops the start with one sentence naming it and the
// fix, not a failure of every create deep in runc; a daemon started with
// umask 077 makes its folders so sandboxes can enter them; an ordinary
// user is told the daemon must run as root; doctor reports the folders of
// the daemon it talks to.
func TestFirstContact(t *testing.T) {
	t.Parallel()
	sandboxd := filepath.Join(bin, "sandboxd")
	start := func(t *testing.T, cred *syscall.Credential, args ...string) (string, error) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, sandboxd, args...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
		out, err := cmd.CombinedOutput()
		return string(out), err
	}

	t.Run("a private folder", func(t *testing.T) {
		d, err := os.MkdirTemp("", "sbd-private-") // 0700, as mktemp -d
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(d) })
		out, err := start(t, nil, "--socket", filepath.Join(d, "s.sock"), "--data-dir", filepath.Join(d, "data"), "--run-dir", filepath.Join(d, "run"))
		if err == nil {
			t.Fatalf("started under a 0700 folder:\n%s", out)
		}
		line := strings.TrimSpace(out)
		if !strings.HasPrefix(line, "sandboxd: sandboxes cannot reach ") || !strings.Contains(line, "chmod o+x "+d) || strings.Contains(line, "\n") {
			t.Fatalf("want one sentence naming %s and the fix, got:\n%s", d, out)
		}
	})

	t.Run("umask 077", func(t *testing.T) {
		wrapper := filepath.Join(searchableTempDir(t), "sandboxd")
		if err := os.WriteFile(wrapper, []byte("#!/bin/sh\numask 077\nexec "+sandboxd+" \"$@\"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		d := startDaemon(t, "", func(d *daemon) { d.exe = wrapper })
		id := d.session(t, nil)
		if e := d.py(t, id, "6 * 7"); result(e) != "42" {
			t.Fatalf("a session of a daemon started with umask 077: %s", describe(e))
		}
		d.ctl(t, "", "rm", id)
		// doctor names this daemon's folders, not the defaults.
		out, _, _ := d.ctl(t, "", "doctor")
		for _, want := range []string{"free for " + d.dataDir, "sandboxes can reach " + d.dataDir + " and " + d.runDir} {
			if !strings.Contains(out, want) {
				t.Errorf("doctor does not say %q:\n%s", want, out)
			}
		}
		info, err := d.c.Info(context.Background())
		if err != nil || info.DataDir != d.dataDir || info.RunDir != d.runDir {
			t.Errorf("info folders: %+v %v", info, err)
		}
	})

	t.Run("not root", func(t *testing.T) {
		d := searchableTempDir(t)
		out, err := start(t, &syscall.Credential{Uid: 65534, Gid: 65534}, "--socket", filepath.Join(d, "s.sock"), "--data-dir", filepath.Join(d, "data"), "--run-dir", filepath.Join(d, "run"))
		if err == nil || strings.TrimSpace(out) != "sandboxd: sandboxd must run as root: it builds sandboxes from namespaces, cgroups and mounts (start it with sudo, or as the systemd service sandboxd)" {
			t.Fatalf("an ordinary user's start: %v\n%s", err, out)
		}
	})
}
