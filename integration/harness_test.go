// Package integration drives a real sandboxd, built from this tree, through
// its API and through sandboxctl. It needs root, as the daemon does.
package integration

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/moby/sys/mountinfo"
	"golang.org/x/sys/unix"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/client"
	"github.com/sandboxd/sandboxd/isolation/agent"
)

// bin holds sandboxd and sandboxctl built for this run.
var bin string

func TestMain(m *testing.M) {
	if os.Geteuid() != 0 {
		fmt.Fprintln(os.Stderr, "integration tests must run as root: the daemon builds sandboxes")
		os.Exit(1)
	}
	// SANDBOXD_TEST_BIN names prebuilt binaries, for hosts without Go (the
	// cgroup v2 VM).
	if dir := os.Getenv("SANDBOXD_TEST_BIN"); dir != "" {
		bin = dir
		os.Exit(run(m))
	}
	dir, err := os.MkdirTemp("", "sandboxd-bin-")
	if err != nil {
		panic(err)
	}
	_ = os.Chmod(dir, 0o755) // other uids run sandboxctl from here
	bin = dir
	if err := buildBinaries(dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := run(m)
	os.RemoveAll(dir)
	os.Exit(code)
}

// run runs the tests, fails the run on what their daemons left (sweepTables)
// and removes the files they shared.
func run(m *testing.M) int {
	code := sweepTables(m.Run())
	shared.remove()
	return code
}

// buildBinaries builds this tree's sandboxd and sandboxctl into dir,
// without the race detector, and a sandboxd-race beside them for the tests
// that take it (raced) when raceDaemons. The suite is CPU-bound on this
// 2-core host: the race detector made every daemon's own work several
// times dearer (its CPU was about a third of the package's) and every
// sandboxctl call cost ~135 ms of CPU at its start, which made the
// package ~40% slower. The daemon's code is raced in its own packages'
// tests under -race, and end to end in the tests that drive it
// concurrently.
func buildBinaries(dir string) error {
	targets := [][]string{
		{"sandboxd", "../cmd/sandboxd"},
		{"sandboxctl", "../cmd/sandboxctl"},
		{"sandboxd-init", "../cmd/sandboxd-init"},
	}
	if raceDaemons {
		targets = append(targets, []string{"sandboxd-race", "../cmd/sandboxd", "-race"})
	}
	errs := make([]error, len(targets)+1)
	var wg sync.WaitGroup
	// The native supervisor (C), beside the daemons that find it there.
	wg.Go(func() {
		if out, err := exec.Command("../isolation/agent/supervisor/build.sh", filepath.Join(dir, agent.SupervisorBinary)).CombinedOutput(); err != nil {
			errs[len(targets)] = fmt.Errorf("build %s: %v\n%s", agent.SupervisorBinary, err, out)
		}
	})
	for i, tg := range targets {
		wg.Go(func() {
			args := append([]string{"build", "-tags", "seccomp"}, tg[2:]...)
			cmd := exec.Command("go", append(args, "-o", filepath.Join(dir, tg[0]), tg[1])...)
			cmd.Env = append(os.Environ(), "CGO_ENABLED=1")
			if out, err := cmd.CombinedOutput(); err != nil {
				errs[i] = fmt.Errorf("build %s: %v\n%s", tg[0], err, out)
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// raceDaemons says the raced tests' daemon is built with the race
// detector: when this test binary is (go test -race), or when
// SANDBOXD_TEST_RACE=1 asks for it. make test sets it and runs this
// package without -race, beside the others with it: the test binary's
// own work (a thousand sessions' clients, tarballs, sandboxctl's output)
// raced cost the package minutes of CPU, for code that is not what the
// package tests.
var raceDaemons = raceEnabled || os.Getenv("SANDBOXD_TEST_RACE") == "1"

// raced is a startDaemon option: the daemon is built with the race
// detector when raceDaemons, for a test that drives it from many
// goroutines at once.
func raced(d *daemon) {
	if raceDaemons {
		d.exe = filepath.Join(bin, "sandboxd-race")
	}
}

// daemon is one sandboxd started for a test.
type daemon struct {
	t       testing.TB
	base    string
	socket  string
	cmd     *exec.Cmd
	logPath string
	c       *client.Client
	done    chan error
	// env is added to the daemon's environment; listener, if set, is
	// passed as a systemd socket-activated socket (fd 3, LISTEN_*).
	env      []string
	listener *os.File
	// runDir is the daemon's --run-dir (default: base/run); daemons may
	// share one, as they share /run/sandboxd by default.
	runDir string
	// binDir, if set, holds the sandboxd to run instead of this tree's (an
	// older release, for upgrade tests).
	binDir string
	// exe, if set, is the sandboxd to run: this tree's, built with the
	// race detector (raced), or an older build that takes this tree's
	// config (restore tests).
	exe string
	// config is the test's own config lines, written over testConfig's at
	// every launch (a test may change them between launches).
	config string
	// dataDir is the daemon's --data-dir (default: base/data); a test may
	// put it on a filesystem of its own.
	dataDir string
}

// startDaemon starts sandboxd with extra TOML config lines, waits until it
// answers, and on cleanup stops it and checks nothing of it is left. opts
// change the daemon before it starts (environment, activation socket).
func startDaemon(t testing.TB, config string, opts ...func(*daemon)) *daemon {
	t.Helper()
	// Under /tmp with a short name: a socket path must fit 107 bytes.
	base, err := os.MkdirTemp("/tmp", "sbd-")
	if err != nil {
		t.Fatal(err)
	}
	_ = os.Chmod(base, 0o755)
	d := &daemon{t: t, base: base, socket: filepath.Join(base, "s.sock"), logPath: filepath.Join(base, "daemon.log"),
		runDir: filepath.Join(base, "run"), dataDir: filepath.Join(base, "data"), config: config}
	d.c = client.New(d.socket)
	for _, o := range opts {
		o(d)
	}
	d.launch()
	t.Cleanup(d.stop)
	return d
}

// launch starts the daemon process on d's folders and waits until it
// answers.
func (d *daemon) launch() {
	t := d.t
	t.Helper()
	logf, err := os.OpenFile(d.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	// Written at each launch: an older daemon (upgrade tests) refuses the
	// keys it does not know, this one needs them.
	if err := os.WriteFile(filepath.Join(d.base, "config.toml"), []byte(testConfig(d.config, d.binDir != "")), 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"--config", filepath.Join(d.base, "config.toml"), "--socket", d.socket,
		"--data-dir", d.dataDir, "--run-dir", d.runDir, "--log-level", "debug"}
	daemonBin := filepath.Join(bin, "sandboxd")
	if d.exe != "" {
		daemonBin = d.exe
	}
	if d.binDir != "" {
		daemonBin = filepath.Join(d.binDir, "sandboxd")
	}
	d.cmd = exec.Command(daemonBin, args...)
	if d.listener != nil {
		// LISTEN_PID must be the daemon's pid: a shell sets it to its own
		// and becomes the daemon.
		d.cmd = exec.Command("/bin/sh", append([]string{"-c", `LISTEN_PID=$$ exec "$0" "$@"`, daemonBin}, args...)...)
		d.cmd.ExtraFiles = []*os.File{d.listener}
		d.cmd.Env = append(os.Environ(), "LISTEN_FDS=1", "LISTEN_FDNAMES=sandboxd.socket")
	}
	if d.env != nil {
		if d.cmd.Env == nil {
			d.cmd.Env = os.Environ()
		}
		d.cmd.Env = append(d.cmd.Env, d.env...)
	}
	d.cmd.Stdout, d.cmd.Stderr = logf, logf
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	d.done = make(chan error, 1)
	go func(cmd *exec.Cmd, done chan error) { done <- cmd.Wait() }(d.cmd, d.done)
	// A launch that fails stops the daemon it started: no stop runs for
	// it (startDaemon registers that only once launch returns).
	answered := false
	defer func() {
		if !answered {
			// Its end stays in done for a stop still to come (a test's
			// cleanup), which would wait for it forever.
			_, err := d.stopProcess()
			d.done <- err
		}
	}()
	deadline := time.Now().Add(20 * time.Second)
	for {
		// It answers: healthy or not (a test may make it unhealthy).
		if h, _ := d.c.HealthStatus(context.Background()); h != nil {
			answered = true
			// An old release's data dir names no instance.
			if b, err := os.ReadFile(filepath.Join(d.dataDir, "instance")); err == nil {
				started(t, strings.TrimSpace(string(b)))
			}
			return
		}
		select {
		case err := <-d.done:
			d.done <- err // for stopProcess
			t.Fatalf("sandboxd exited at start: %v\n%s", err, d.log())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("sandboxd did not answer within 20s\n%s", d.log())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// terminate ends the daemon with SIGTERM, as systemctl stop does, and
// waits for it; its sessions run on.
func (d *daemon) terminate() {
	t := d.t
	d.c.Close()
	switch killed, err := d.stopProcess(); {
	case killed:
		t.Errorf("sandboxd did not stop within 30s of SIGTERM\n%s", d.log())
	case err != nil:
		t.Errorf("sandboxd exited with %v\n%s", err, d.log())
	}
}

// stopProcess ends the daemon's process with SIGTERM (SIGKILL after 30 s)
// and waits for it: whether it had to be killed, and how it exited.
func (d *daemon) stopProcess() (killed bool, err error) {
	_ = d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err = <-d.done:
		return false, err
	case <-time.After(30 * time.Second):
		_ = d.cmd.Process.Kill()
		return true, <-d.done
	}
}

// daemonEnds are the ways bounce ends a daemon.
var daemonEnds = []string{"restart", "crash"}

// bounce ends the daemon, with SIGTERM for "restart" and SIGKILL for
// "crash", and starts it again over the same folders.
func (d *daemon) bounce(how string) {
	if how == "crash" {
		d.crash()
	} else {
		d.terminate()
	}
	d.launch()
}

// crash kills the daemon with SIGKILL, as a crash or the OOM killer would.
func (d *daemon) crash() {
	_ = d.cmd.Process.Kill()
	<-d.done
	d.c.Close()
}

func (d *daemon) log() string {
	b, _ := os.ReadFile(d.logPath)
	return string(b)
}

// stop deletes every session (they would outlive the daemon), ends the
// daemon with SIGTERM and checks it left nothing behind.
func (d *daemon) stop() {
	t := d.t
	var ids []string
	if list, err := d.c.ListSessions(context.Background(), nil); err == nil {
		for _, s := range list {
			ids = append(ids, s.ID)
			if err := d.c.DeleteSession(context.Background(), s.ID); err != nil {
				t.Errorf("delete session %s: %v", s.ID, err)
			}
		}
	}
	// Volumes go after their sessions (a test that failed may have left
	// some): their disks are the daemon's mounts too.
	if vols, err := d.c.Volumes(context.Background()); err == nil {
		for _, v := range vols {
			if err := d.c.DeleteVolume(context.Background(), fmt.Sprintf("%d/%s", v.OwnerUID, v.Name)); err != nil {
				t.Errorf("delete volume %s: %v", v.Name, err)
			}
		}
	}
	d.terminate()
	if t.Failed() {
		t.Logf("daemon log:\n%s", d.log())
	}
	assertNoSandboxesLeft(t, d, ids, true)
	if d.binDir == "" {
		assertNoNetworkLeft(t, d.instance())
	}
	// A daemon with no session left gives its id range lease back.
	if _, err := os.Stat(filepath.Join(leaseDir, d.instance()+".json")); err == nil {
		t.Errorf("the daemon kept its id range lease with no session left")
		_ = os.Remove(filepath.Join(leaseDir, d.instance()+".json"))
	}
	// Disks of sessions a failed test could not delete stay mounted: unmount
	// them, so no test leaves a mount behind.
	unmountUnder(t, d.base)
	if !strings.HasPrefix(d.dataDir, d.base+"/") {
		unmountUnder(t, d.dataDir)
	}
	_ = os.RemoveAll(d.base)
}

// unmountUnder unmounts every mount below dir, deepest first.
func unmountUnder(t testing.TB, dir string) {
	mounts, err := mountinfo.GetMounts(mountinfo.PrefixFilter(dir))
	if err != nil {
		t.Error(err)
		return
	}
	sort.Slice(mounts, func(i, j int) bool { return len(mounts[i].Mountpoint) > len(mounts[j].Mountpoint) })
	for _, m := range mounts {
		if err := unix.Unmount(m.Mountpoint, unix.MNT_DETACH); err != nil {
			t.Errorf("unmount %s: %v", m.Mountpoint, err)
		}
	}
}

// assertNoSandboxesLeft checks no process, cgroup or runtime folder of the
// given sessions (or of any sandbox of this daemon) is left; once the
// daemon has stopped, not even its cgroup folder.
func assertNoSandboxesLeft(t testing.TB, d *daemon, ids []string, stopped bool) {
	t.Helper()
	if ents, _ := os.ReadDir(filepath.Join(d.stateDir(), "sandboxes")); len(ents) > 0 {
		t.Errorf("sandbox folders left in the run dir: %d", len(ents))
	}
	if ents, _ := os.ReadDir(filepath.Join(d.stateDir(), "runc")); len(ents) > 0 {
		t.Errorf("libcontainer state left: %d", len(ents))
	}
	procs, _ := filepath.Glob("/proc/[0-9]*/cgroup")
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		for _, id := range ids {
			if bytes.Contains(b, []byte("/"+id+"\n")) {
				t.Errorf("process %s still runs in the cgroup of session %s", filepath.Base(filepath.Dir(p)), id)
			}
		}
	}
	want := map[string]bool{}
	for _, id := range ids {
		want[id] = true
	}
	_ = filepath.WalkDir("/sys/fs/cgroup", func(p string, e fs.DirEntry, err error) error {
		if err != nil || !e.IsDir() {
			return nil
		}
		if want[e.Name()] {
			t.Errorf("cgroup of session %s left: %s", e.Name(), p)
		}
		// The daemon's own sandbox folder goes when its last sandbox does.
		if stopped && e.Name() == d.cgroupName() {
			t.Errorf("the daemon's cgroup folder is left: %s", p)
		}
		return nil
	})
}

// leaseDir is where every sandboxd of the host leases its id range.
const leaseDir = "/run/sandboxd-ids"

// instance is the daemon's instance id, which names what it makes outside
// its data dir: its cgroup folder and its state folder under the run dir.
func (d *daemon) instance() string {
	b, err := os.ReadFile(filepath.Join(d.dataDir, "instance"))
	if err != nil {
		d.t.Fatalf("the daemon's instance id: %v", err)
	}
	return strings.TrimSpace(string(b))
}

// legacy reports whether the daemon's data dir is older than instance
// ids: its sandboxes live where they always did.
func (d *daemon) legacy() bool { return strings.HasPrefix(d.instance(), "legacy-") }

// stateDir is the daemon's runtime state folder.
func (d *daemon) stateDir() string {
	if d.legacy() {
		return filepath.Join(d.runDir, "state")
	}
	return filepath.Join(d.runDir, "state-"+d.instance())
}

// cgroupName is the daemon's sandbox cgroup folder.
func (d *daemon) cgroupName() string {
	switch {
	case !d.legacy():
		return "sandboxd-" + d.instance()
	case isCgroup2():
		return "sandboxes"
	default:
		return "sandboxd"
	}
}

// isCgroup2 reports whether the host runs cgroup v2 alone.
func isCgroup2() bool {
	_, err := os.Stat("/sys/fs/cgroup/cgroup.controllers")
	return err == nil
}

// ctl runs sandboxctl against the daemon and returns stdout, stderr and the
// exit code.
func (d *daemon) ctl(t *testing.T, stdin string, args ...string) (string, string, int) {
	t.Helper()
	return runCtl(t, d.socket, nil, stdin, args...)
}

// otherUser is a user other than root, with no account on the host: the
// tests' "someone else" (a daemon's socket chmod 0666 lets them in).
var otherUser = &syscall.Credential{Uid: 54321, Gid: 54321}

// runCtl runs sandboxctl against socket as cred (nil: this process's).
func runCtl(t *testing.T, socket string, cred *syscall.Credential, stdin string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(filepath.Join(bin, "sandboxctl"), append([]string{"--socket", socket}, args...)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	cmd.Stdin = strings.NewReader(stdin)
	if cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	}
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), errb.String(), code
}

// session creates a session and deletes it at cleanup.
func (d *daemon) session(t testing.TB, req *api.CreateSessionRequest) string {
	t.Helper()
	if req == nil {
		req = &api.CreateSessionRequest{}
	}
	s, err := d.c.CreateSession(context.Background(), req)
	if err != nil {
		t.Fatalf("create session: %v", err)
	}
	t.Cleanup(func() { _ = d.c.DeleteSession(context.Background(), s.ID) })
	return s.ID
}

// exec runs code and fails the test on a transport error.
func (d *daemon) exec(t testing.TB, id, lang, code string, timeout float64) *api.Execution {
	t.Helper()
	req := &api.ExecRequest{Language: lang, Code: code}
	if timeout > 0 {
		req.TimeoutS = &timeout
	}
	e, err := d.c.Exec(context.Background(), id, req, nil)
	if err != nil {
		t.Fatalf("exec %q: %v", code, err)
	}
	return e
}

func (d *daemon) py(t testing.TB, id, code string) *api.Execution {
	t.Helper()
	return d.exec(t, id, api.LanguagePython, code, 0)
}

// warmErrors raises an error in session id's interpreter, whose first
// error imports traceback (~10 ms here; over a second in the emulated VM
// under load, past testConfig's 1 s interrupt grace): then what a test's
// interrupt or timeout has to beat is the grace, not that import.
func (d *daemon) warmErrors(t testing.TB, id string) {
	t.Helper()
	if e := d.py(t, id, "1/0"); e.Error == nil || e.Error.Name != "ZeroDivisionError" {
		t.Fatalf("1/0: %+v", e)
	}
}

func (d *daemon) sh(t testing.TB, id, code string) *api.Execution {
	t.Helper()
	return d.exec(t, id, api.LanguageShell, code, 0)
}

// raw sends a raw HTTP request to the daemon and returns status and body.
func (d *daemon) raw(t *testing.T, method, path, body string) (int, []byte) {
	t.Helper()
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var dl net.Dialer
		return dl.DialContext(ctx, "unix", d.socket)
	}}}
	defer hc.CloseIdleConnections()
	req, err := http.NewRequest(method, "http://sandboxd"+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

func result(e *api.Execution) string {
	if e.Result == nil {
		return "<none>"
	}
	return *e.Result
}

// testConfig is the daemon config of a test: a short interrupt grace, no
// warm pool unless the test asks for one (pooled sandboxes have no
// session, which would confuse the tests that count what is left), no disk
// admission unless the test sets it (tests run many daemons with many 1
// GiB sparse disks at once, also on a VM's small disk: what they write is
// small), then the test's own lines. old leaves out keys an older daemon
// does not know.
func testConfig(extra string, old bool) string {
	c := "interrupt_grace_s = 1\n"
	if !strings.Contains(extra, "pool_size") {
		c += "pool_size = 0\n"
	}
	// A pool stays at its pool_size unless the test is about its growth.
	if !old && !strings.Contains(extra, "pool_max_size") {
		c += "pool_max_size = 0\n"
	}
	if !old && !strings.Contains(extra, "data_dir_min_free_mb") {
		c += "data_dir_min_free_mb = 0\n"
	}
	if !old && !strings.Contains(extra, "disk_overcommit") {
		c += "disk_overcommit = 1000000.0\n"
	}
	return c + extra
}

// notInVM skips, in the VM (-short), a part of a VM test (vm/tests.txt)
// that depends on neither cgroup v2 nor systemd: the host's run covers it.
// Whole tests are chosen for the VM by that list, not here.
func notInVM(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("depends on neither cgroup v2 nor systemd: the host's run covers it")
	}
}

// eachRuntime runs body once for each runtime, as subtests named for it:
// cfg is the config line that makes it the daemon's default_runtime, for
// the body to put first in the config of the daemon it starts. The
// assertions are the same for both: where gVisor answers differently
// the body says so, per runtime (docs/runsc.md lists every difference).
//
// The VM (-short: cgroup v2 under systemd, emulated, where gVisor's
// ptrace platform is slow) runs runc alone here; runsc there runs the
// smoke subset, the tests that call eachRuntimeAlsoInVM.
func eachRuntime(t *testing.T, body func(t *testing.T, rt, cfg string)) {
	runtimes(t, !testing.Short(), body)
}

// eachRuntimeAlsoInVM is eachRuntime for the VM's runsc smoke subset: it
// runs runsc under -short too.
func eachRuntimeAlsoInVM(t *testing.T, body func(t *testing.T, rt, cfg string)) {
	runtimes(t, true, body)
}

func runtimes(t *testing.T, runsc bool, body func(t *testing.T, rt, cfg string)) {
	rts := []string{api.RuntimeRunc}
	if runsc {
		rts = append(rts, api.RuntimeRunsc)
	}
	for _, rt := range rts {
		t.Run(rt, func(t *testing.T) { body(t, rt, fmt.Sprintf("default_runtime = %q\n", rt)) })
	}
}

// searchableTempDir is a t.TempDir that sandboxes' ids may enter, for a
// daemon's data or run dir (the daemon refuses folders they cannot reach):
// t.TempDir's parent is 0700.
func searchableTempDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, d := range []string{filepath.Dir(dir), dir} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// sandboxMounts are the mounts under dir that sandboxes made: every one
// but the daemon's own lxcfs, which lives as long as the daemon.
func sandboxMounts(t testing.TB, dir string) []*mountinfo.Info {
	t.Helper()
	ms, err := mountinfo.GetMounts(mountinfo.PrefixFilter(dir))
	if err != nil {
		t.Fatal(err)
	}
	var out []*mountinfo.Info
	for _, m := range ms {
		if m.FSType != "fuse.lxcfs" {
			out = append(out, m)
		}
	}
	return out
}
