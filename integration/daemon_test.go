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

	"github.com/containerd/errdefs"

	"github.com/sandboxd/sandboxd/api"
)

// TestCrashThenStart kills the daemon with SIGKILL while a session runs:
// the next daemon takes the session back, files and variables intact.
func TestCrashThenStart(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, "")
	ctx := context.Background()
	id := d.session(t, nil)
	d.py(t, id, "open('kept.txt', 'w').write('yes')\nx = 41")
	// Made just before the kill: its record may be in the store's
	// session log alone, which the next start replays.
	late := d.session(t, nil)
	d.crash()
	d.launch()
	for _, id := range []string{id, late} {
		s, err := d.c.GetSession(ctx, id)
		if err != nil || s.Status != api.StatusRunning {
			t.Fatalf("after a crash the session runs on: %+v %v", s, err)
		}
	}
	if e := d.py(t, id, "open('kept.txt').read(), x + 1"); result(e) != "('yes', 42)" {
		t.Fatalf("workspace and interpreter after the crash: %s", describe(e))
	}
}

// TestOneDaemonPerSocketAndDataDir checks a second daemon fails fast with a
// clear message and leaves the first one serving.
func TestOneDaemonPerSocketAndDataDir(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, "")
	id := d.session(t, nil)
	run := func(args ...string) string {
		cmd := exec.Command(filepath.Join(bin, "sandboxd"), args...)
		done := make(chan struct{})
		var out []byte
		var err error
		go func() { out, err = cmd.CombinedOutput(); close(done) }()
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			cmd.Process.Kill()
			t.Fatalf("a second sandboxd %v hung", args)
		}
		if err == nil {
			t.Fatalf("a second sandboxd %v started", args)
		}
		return string(out)
	}
	if out := run("--socket", d.socket, "--data-dir", t.TempDir(), "--run-dir", t.TempDir()); !strings.Contains(out, "already serving") {
		t.Fatalf("same socket: %s", out)
	}
	other := filepath.Join(t.TempDir(), "o.sock")
	if out := run("--socket", other, "--data-dir", filepath.Join(d.base, "data"), "--run-dir", t.TempDir()); !strings.Contains(out, "another sandboxd") {
		t.Fatalf("same data dir: %s", out)
	}
	if e := d.py(t, id, "'still serving'"); result(e) != "'still serving'" {
		t.Fatalf("first daemon: %+v", e)
	}
}

func TestIdleTimeoutStopsSessions(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, "")
	idle := 1
	id := d.session(t, &api.CreateSessionRequest{IdleTimeoutS: &idle})
	keep := d.session(t, nil)
	deadline := time.Now().Add(10 * time.Second)
	for {
		s, err := d.c.GetSession(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if s.Status == api.StatusStopped {
			if !strings.Contains(s.Reason, "idle") {
				t.Fatalf("reason %q", s.Reason)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("an idle session was not stopped")
		}
		time.Sleep(200 * time.Millisecond)
	}
	if s, _ := d.c.GetSession(context.Background(), keep); s.Status != api.StatusRunning {
		t.Fatalf("a session with the default idle timeout was stopped: %+v", s)
	}
}

// TestSessionLifetime checks max_session_lifetime_s: a session that old is
// stopped, even mid-execution, and may not start again; its files stay
// readable. The lifetime counts from the create's start, and a create
// under software emulation (the VM) takes seconds: 12 s leave room for
// the file to be written before the end comes.
func TestSessionLifetime(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, "max_session_lifetime_s = 12\n")
	ctx := context.Background()
	id := d.session(t, nil)
	d.py(t, id, "open('out.txt', 'w').write('result')")
	e := d.exec(t, id, "python", "import time\ntime.sleep(20)", 30)
	if e.Status == api.StatusOK {
		t.Fatalf("an execution past the lifetime must be cut off: %s", describe(e))
	}
	waitFor(t, func() bool {
		s, err := d.c.GetSession(ctx, id)
		return err == nil && s.Status == api.StatusStopped && strings.Contains(s.Reason, "lifetime")
	})
	if _, err := d.c.StartSession(ctx, id); !errdefs.IsConflict(err) || !strings.Contains(err.Error(), "lifetime") {
		t.Fatalf("start past the lifetime must be 409 saying why: %v", err)
	}
	r, _, err := d.c.GetFile(ctx, id, "/workspace/out.txt")
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
}

func TestSocketPermissions(t *testing.T) {
	t.Parallel()
	// "daemon" is a system group every Debian host has (gid 1).
	d := startDaemon(t, "socket_group = \"daemon\"\n")
	fi, err := os.Stat(d.socket)
	if err != nil {
		t.Fatal(err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	if fi.Mode().Perm() != 0o660 || st.Gid != 1 || st.Uid != 0 {
		t.Fatalf("socket mode %v owner %d:%d", fi.Mode().Perm(), st.Uid, st.Gid)
	}
	// Outside the group, the socket is closed.
	_, stderr, code := runCtl(t, d.socket, otherUser, "", "ls")
	if code == 0 || !strings.Contains(stderr, "permission denied") {
		t.Fatalf("a stranger reached the socket: %d %q", code, stderr)
	}
}

func TestRichOutputs(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, "")
	id := d.session(t, nil)
	e := d.py(t, id, "import matplotlib.pyplot as plt\nplt.plot([1, 2, 3])\nplt.figure()\nplt.bar([1], [2])\nNone")
	if e.Status != api.StatusOK || len(e.Outputs) != 2 || e.Outputs[0].MIME != "image/png" || !strings.HasPrefix(e.Outputs[0].Data, "iVBORw0KGgo") {
		t.Fatalf("figures: status %s, %d outputs, error %+v", e.Status, len(e.Outputs), e.Error)
	}
	if e := d.py(t, id, "plt.get_fignums()"); result(e) != "[]" {
		t.Fatalf("figures are closed once sent: %s", result(e))
	}
}
