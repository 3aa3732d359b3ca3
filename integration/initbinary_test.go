package integration

import (
	"context"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/isolation/agent"
)

// TestSandboxInit checks what a runc sandbox's start executes: the
// sandboxd-init beside the daemon (its sealed copy, which the daemon
// holds), not the daemon's own binary; and, where there is none, the
// daemon's own init, as before. The sandboxd-init here is a script that
// notes each start (not the daemon's --version of it) and executes the
// real one. Then the sandbox's PID 1: the native supervisor beside the
// daemon, or the Python one where there is none, or one of another build.
func TestSandboxInit(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	marker := filepath.Join(dir, "starts")
	script := fmt.Sprintf("#!/bin/sh\n[ \"$1\" = init ] && echo start >>%s\nexec %s \"$@\"\n", marker, filepath.Join(bin, "sandboxd-init"))
	for _, f := range []struct {
		name, body string
	}{{"with/sandboxd-init", script}, {"without/.keep", ""},
		{"other/" + agent.SupervisorBinary, "#!/bin/sh\necho '" + agent.SupervisorBinary + " 1'\n"}} {
		if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(f.name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f.name), []byte(f.body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// The daemon's binary in each (os.Executable resolves a symlink): a
	// hard link, or a copy across filesystems.
	link := func(name, sub string) {
		to := filepath.Join(dir, sub, name)
		if os.Link(filepath.Join(bin, name), to) == nil {
			return
		}
		exe, err := os.ReadFile(filepath.Join(bin, name))
		if err == nil {
			err = os.WriteFile(to, exe, 0o755)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, sub := range []string{"with", "without", "other"} {
		link("sandboxd", sub)
	}
	link(agent.SupervisorBinary, "with")
	pid1 := func(d *daemon, id string) string {
		t.Helper()
		x := d.exec(t, id, api.LanguageShell, "tr '\\0' ' ' </proc/1/cmdline", 0)
		return x.Stdout
	}
	// What GET /v1/info says of the supervisor (sandboxctl info's line).
	supervisor := func(d *daemon) string {
		t.Helper()
		info, err := d.c.Info(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		return info.Supervisor
	}

	d := startDaemon(t, "", func(d *daemon) { d.exe = filepath.Join(dir, "with", "sandboxd") })
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", d.cmd.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	held := false
	for _, e := range fds {
		if l, _ := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", d.cmd.Process.Pid, e.Name())); strings.HasPrefix(l, "/memfd:runc_cloned:sandboxd-init") {
			held = true
		}
	}
	if !held {
		t.Fatal("the daemon holds no copy of sandboxd-init")
	}
	id := d.session(t, &api.CreateSessionRequest{Runtime: api.RuntimeRunc})
	if x := d.py(t, id, "6 * 7"); x.Result == nil || *x.Result != "42" {
		t.Fatalf("a session started by sandboxd-init: %+v", x)
	}
	if b, err := os.ReadFile(marker); err != nil || !strings.HasPrefix(string(b), "start\n") {
		t.Fatalf("sandboxd-init's starts: %q %v", b, err)
	}
	if got := pid1(d, id); !strings.HasPrefix(got, path.Join(agent.Dir, agent.SupervisorBinary)+" ") {
		t.Fatalf("PID 1 of a session beside the native supervisor: %q", got)
	}
	// (the daemon's path for it is /proc/self/exe's folder: dir's with
	// its links resolved)
	if got := supervisor(d); !strings.HasSuffix(got, "/with/"+agent.SupervisorBinary) {
		t.Fatalf("info's supervisor: %q, want the one in %s/with", got, dir)
	}

	// None beside it: the daemon's own init starts them.
	d = startDaemon(t, "", func(d *daemon) { d.exe = filepath.Join(dir, "without", "sandboxd") })
	id = d.session(t, &api.CreateSessionRequest{Runtime: api.RuntimeRunc})
	if x := d.py(t, id, "6 * 7"); x.Result == nil || *x.Result != "42" {
		t.Fatalf("a session started by the daemon's own init: %+v", x)
	}
	if !strings.Contains(d.log(), "no sandboxd-init beside the daemon") {
		t.Fatal("the daemon did not say it starts sandboxes with its own init")
	}
	if got := pid1(d, id); !strings.Contains(got, " -S -c ") || !strings.Contains(got, "_sandboxd_agent") {
		t.Fatalf("PID 1 of a session without the native supervisor: %q", got)
	}
	if !strings.Contains(d.log(), "no "+agent.SupervisorBinary+" beside the daemon") {
		t.Fatal("the daemon did not say it starts sandboxes with the Python supervisor")
	}
	if got := supervisor(d); got != "" {
		t.Fatalf("info's supervisor without one: %q", got)
	}

	// Another build's supervisor is not taken.
	d = startDaemon(t, "", func(d *daemon) { d.exe = filepath.Join(dir, "other", "sandboxd") })
	id = d.session(t, &api.CreateSessionRequest{Runtime: api.RuntimeRunc})
	if got := pid1(d, id); !strings.Contains(got, "_sandboxd_agent") {
		t.Fatalf("PID 1 of a session beside another build's supervisor: %q", got)
	}
	if !strings.Contains(d.log(), "another build's") {
		t.Fatal("the daemon did not say why it left the other build's supervisor")
	}
}
