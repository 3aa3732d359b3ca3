package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sandboxd/sandboxd/api"
)

// gvisorKernel is the kernel release Debian 12's runsc reports.
const gvisorKernel = "4.4.0"

// isGvisorKernel says release is one gVisor reports: Debian's, or a
// newer build's ("4.19.0-gvisor", make's RUNSC_NET).
func isGvisorKernel(release string) bool {
	return release == gvisorKernel || strings.HasSuffix(release, "-gvisor")
}

// TestRuntimeChoice checks a session's runtime comes from the request,
// else its template, else the daemon's default, end to end from the API
// and sandboxctl: each session runs where it says (gVisor reports its own
// kernel), a template's warm pool runs on the template's runtime, one-shot
// runs take a runtime too, and a runtime the daemon lacks answers 400.
func TestRuntimeChoice(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, "")
	ctx := context.Background()
	kernel := func(id string) string {
		t.Helper()
		return strings.TrimSpace(d.sh(t, id, "uname -r").Stdout)
	}
	info := d.info(t)
	if info.Runtime != api.RuntimeRunc || len(info.Runtimes) != 2 || !info.Runtimes[1].Usable || info.Runtimes[1].Platform != "ptrace" {
		t.Fatalf("info's runtimes: %q %+v", info.Runtime, info.Runtimes)
	}

	native := d.session(t, nil)
	gvisor := d.session(t, &api.CreateSessionRequest{Runtime: api.RuntimeRunsc})
	if k := kernel(native); k == gvisorKernel {
		t.Fatalf("a default session runs on gVisor (%s)", k)
	}
	if k := kernel(gvisor); k != gvisorKernel {
		t.Fatalf("a runsc session reports kernel %s", k)
	}
	if s, err := d.c.GetSession(ctx, gvisor); err != nil || s.Runtime != api.RuntimeRunsc {
		t.Fatalf("session's runtime: %+v %v", s, err)
	}

	// sandboxctl: create --runtime, ls shows it, info lists the runtimes.
	out, stderr, code := d.ctl(t, "", "create", "--runtime", "runsc", "--json")
	var s api.Session
	if code != 0 || json.Unmarshal([]byte(out), &s) != nil || s.Runtime != api.RuntimeRunsc {
		t.Fatalf("sandboxctl create --runtime runsc: %d %s %s", code, out, stderr)
	}
	t.Cleanup(func() { _ = d.c.DeleteSession(ctx, s.ID) })
	if k := kernel(s.ID); k != gvisorKernel {
		t.Fatalf("sandboxctl's runsc session reports kernel %s", k)
	}
	if out, _, _ := d.ctl(t, "", "ls"); !strings.Contains(out, "RUNTIME") || !strings.Contains(out, "runsc") {
		t.Fatalf("sandboxctl ls:\n%s", out)
	}
	if out, _, _ := d.ctl(t, "", "info"); !strings.Contains(out, "runsc") {
		t.Fatalf("sandboxctl info:\n%s", out)
	}
	if _, stderr, code := d.ctl(t, "", "create", "--runtime", "kata"); code == 0 || !strings.Contains(stderr, "kata") {
		t.Fatalf("an unknown runtime: %d %s", code, stderr)
	}
	if code, body := d.raw(t, "POST", "/v1/sessions", `{"runtime":"kata"}`); code != 400 || !strings.Contains(string(body), api.CodeInvalidArgument) {
		t.Fatalf("an unknown runtime over the API: %d %s", code, body)
	}

	// A template's runtime, and its warm pool on it.
	one := 1
	if _, err := d.c.AddTemplate(ctx, &api.Template{Name: "gv", Runtime: api.RuntimeRunsc, PoolSize: &one}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool {
		tp, err := d.c.Template(ctx, "gv")
		return err == nil && tp.PoolIdle == 1
	})
	pooled := d.session(t, &api.CreateSessionRequest{Template: "gv"})
	if !strings.Contains(d.log(), `"from":"pool"`) {
		t.Fatalf("the template's session did not come from its pool:\n%s", d.log())
	}
	if k := kernel(pooled); k != gvisorKernel {
		t.Fatalf("a session of a runsc template reports kernel %s", k)
	}
	if e := d.py(t, pooled, "x = 6\nx * 7"); result(e) != "42" {
		t.Fatalf("python in a pooled runsc session: %s", describe(e))
	}
	// gVisor keeps the pids limit inside (RLIMIT_NPROC), fixed at its
	// start: a session that asks for another one starts cold, with it.
	nproc := func(id string) string {
		t.Helper()
		return strings.TrimSpace(d.py(t, id, "import resource\nprint(resource.getrlimit(resource.RLIMIT_NPROC)[0])").Stdout)
	}
	if n := nproc(pooled); n != "256" {
		t.Fatalf("a pooled runsc session's RLIMIT_NPROC: %s, want the default pids 256", n)
	}
	waitFor(t, func() bool {
		tp, err := d.c.Template(ctx, "gv")
		return err == nil && tp.PoolIdle == 1
	})
	own := d.session(t, &api.CreateSessionRequest{Template: "gv", Pids: ptr(int64(64))})
	if n := nproc(own); n != "64" {
		t.Fatalf("a runsc session with pids 64 has RLIMIT_NPROC %s", n)
	}
	if tp, err := d.c.Template(ctx, "gv"); err != nil || tp.PoolIdle != 1 {
		t.Fatalf("a session with its own pids limit took the pooled sandbox: %+v %v", tp, err)
	}
	// The request's runtime wins over the template's.
	over := d.session(t, &api.CreateSessionRequest{Template: "gv", Runtime: api.RuntimeRunc})
	if k := kernel(over); k == gvisorKernel {
		t.Fatal("runtime runc on a runsc template ran on gVisor")
	}

	// One-shot runs.
	run, err := d.c.Run(ctx, &api.RunRequest{CreateSessionRequest: api.CreateSessionRequest{Runtime: api.RuntimeRunsc}, Language: "shell", Code: "uname -r"}, nil)
	if err != nil || strings.TrimSpace(run.Stdout) != gvisorKernel {
		t.Fatalf("a one-shot run on runsc: %+v %v", run, err)
	}
}

// TestStrictRuntime checks a daemon with strict_runtime and runsc as its
// default refuses runc requests, and that one whose runsc cannot run
// refuses to start (and --validate says why) instead of falling back to
// runc.
func TestStrictRuntime(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, "default_runtime = \"runsc\"\nstrict_runtime = true\n")
	id := d.session(t, nil)
	if k := strings.TrimSpace(d.sh(t, id, "uname -r").Stdout); k != gvisorKernel {
		t.Fatalf("a strict runsc daemon's session reports kernel %s", k)
	}
	if code, body := d.raw(t, "POST", "/v1/sessions", `{"runtime":"runc"}`); code != 400 || !strings.Contains(string(body), "strict_runtime") {
		t.Fatalf("runc on a strict runsc daemon: %d %s", code, body)
	}

	dir := searchableTempDir(t)
	cfg := filepath.Join(dir, "c.toml")
	config := "default_runtime = \"runsc\"\nstrict_runtime = true\n[runsc]\npath = \"" + filepath.Join(dir, "runsc") + "\"\n"
	if err := os.WriteFile(cfg, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	const want = "strict_runtime is set and the default runtime runsc is not usable"
	for _, args := range [][]string{
		{"--config", cfg, "--validate"},
		{"--config", cfg, "--socket", filepath.Join(dir, "s.sock"), "--data-dir", filepath.Join(dir, "data"), "--run-dir", filepath.Join(dir, "run")},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		out, err := exec.CommandContext(ctx, filepath.Join(bin, "sandboxd"), args...).CombinedOutput()
		cancel()
		if err == nil || !strings.Contains(string(out), want) {
			t.Errorf("sandboxd %v: %v\n%s", args, err, out)
		}
	}
	// The daemon that did not start left no network behind.
	if b, err := os.ReadFile(filepath.Join(dir, "data", "instance")); err == nil {
		assertNoNetworkLeft(t, strings.TrimSpace(string(b)))
	} else {
		t.Errorf("the refused daemon's instance: %v", err)
	}
}

// TestRunscCgroup checks a runsc sandbox's processes, its Sentry and its
// gofer, are in the session's own cgroup (its limits and its stats are
// there), and that the daemon changed nothing above its own cgroup for
// it: runsc given the cgroup's path enables every controller the host has
// in each of its parents on cgroup v2, the root's and systemd's slices
// included, and runsc do makes runsc-<pid> at the root of each hierarchy.
func TestRunscCgroup(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, `default_runtime = "runsc"`+"\n")
	before := parentControls(t) // once the daemon set its own cgroup up
	id := d.session(t, &api.CreateSessionRequest{Pids: ptr(int64(256))})
	if e := d.py(t, id, "print(6 * 7)"); e.Stdout != "42\n" {
		t.Fatalf("exec: %+v", e)
	}
	b, err := os.ReadFile(filepath.Join(sandboxCgroupParent(t, d), id, "cgroup.procs"))
	if err != nil {
		t.Fatal(err)
	}
	var found []string
	for _, pid := range strings.Fields(string(b)) {
		if pid == strconv.Itoa(d.cmd.Process.Pid) {
			// On v1 a daemon thread forks runsc from inside the cgroup,
			// then must go back where it was.
			t.Fatalf("the daemon is in the session's cgroup: %s", b)
		}
		if cmd, err := os.ReadFile("/proc/" + pid + "/cmdline"); err == nil {
			found = append(found, string(cmd[:bytes.IndexByte(append(cmd, 0), 0)]))
		}
	}
	if !slices.Contains(found, "runsc-sandbox") || !slices.Contains(found, "runsc-gofer") {
		t.Fatalf("the session's cgroup holds %q, not runsc's sandbox and gofer", found)
	}
	if out, stderr, _ := d.ctl(t, "", "doctor", "--data-dir", d.base); !strings.Contains(out, "a sandbox on platform") {
		t.Fatalf("doctor ran no runsc sandbox:\n%s%s", out, stderr)
	}
	if after := parentControls(t); !maps.Equal(before, after) {
		t.Fatalf("cgroup.subtree_control above the daemon's cgroup changed:\nbefore %q\nafter  %q", before, after)
	}
}

// parentControls is the cgroup.subtree_control of every parent of the
// test's cgroup v2, from the root down (none on cgroup v1): what the test
// and its daemons must leave as they are.
func parentControls(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	if !isCgroup2() {
		return out
	}
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		t.Fatal(err)
	}
	own := strings.TrimPrefix(strings.TrimSpace(string(b)), "0::")
	for dir := filepath.Dir(own); ; dir = filepath.Dir(dir) {
		c, err := os.ReadFile(filepath.Join("/sys/fs/cgroup", dir, "cgroup.subtree_control"))
		if err != nil {
			t.Fatal(err)
		}
		out[dir] = string(c)
		if dir == "/" {
			return out
		}
	}
}
