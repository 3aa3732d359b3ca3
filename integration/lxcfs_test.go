package integration

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/moby/sys/mountinfo"
	"golang.org/x/sys/unix"

	"github.com/sandboxd/sandboxd/api"
)

// systemLXCFS is where Debian's lxcfs.service mounts lxcfs (the VM's).
const systemLXCFS = "/var/lib/lxcfs"

// lxcfsServes says dir is a FUSE mount whose proc/meminfo reads: a live
// lxcfs.
func lxcfsServes(dir string) bool {
	var st unix.Statfs_t
	if unix.Statfs(dir, &st) != nil || st.Type != unix.FUSE_SUPER_MAGIC {
		return false
	}
	b, err := os.ReadFile(filepath.Join(dir, "proc/meminfo"))
	return err == nil && len(b) > 0
}

// lxcfsFor is an lxcfs mount for t's daemon: the host's, where systemd
// runs one (the VM), else one this test starts in the foreground on a
// folder of its own and stops at cleanup, mount included, even if the
// test fails. Without the lxcfs binary the test fails: make test-deps
// installs it.
func lxcfsFor(t *testing.T) string {
	t.Helper()
	if lxcfsServes(systemLXCFS) {
		return systemLXCFS
	}
	path, err := exec.LookPath("lxcfs")
	if err != nil {
		t.Fatal("lxcfs is not installed: run make test-deps (apt-get install lxcfs)")
	}
	dir, err := os.MkdirTemp("/tmp", "sbd-lxcfs-")
	if err != nil {
		t.Fatal(err)
	}
	mnt := filepath.Join(dir, "mnt")
	if err := os.Mkdir(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	logf, err := os.Create(filepath.Join(dir, "lxcfs.log"))
	if err != nil {
		t.Fatal(err)
	}
	// --enable-cfs: cpuinfo, stat and cpu/online follow the CPU quota, as
	// well as the cpuset.
	cmd := exec.Command(path, "-f", "--enable-cfs", "-p", filepath.Join(dir, "lxcfs.pid"), mnt)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		// SIGTERM makes lxcfs unmount itself; a lazy unmount catches a
		// mount it left (killed, or stuck).
		_ = cmd.Process.Signal(unix.SIGTERM)
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		// EINVAL: nothing mounted there, as expected.
		_ = unix.Unmount(mnt, unix.MNT_DETACH)
		logf.Close()
		if t.Failed() {
			b, _ := os.ReadFile(logf.Name())
			t.Logf("lxcfs log:\n%s", b)
		}
		os.RemoveAll(dir)
	})
	for deadline := time.Now().Add(10 * time.Second); !lxcfsServes(mnt); {
		select {
		case <-done:
			b, _ := os.ReadFile(logf.Name())
			t.Fatalf("lxcfs exited at start:\n%s", b)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("lxcfs did not serve within 10 s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	return mnt
}

// TestDaemonRunsItsOwnLXCFS checks a daemon whose lxcfs_dir nothing
// serves (a host without systemd, where lxcfs is installed but not
// running) serves sandboxes with an lxcfs of its own: MemTotal is the
// session's memory; the lxcfs runs on through a daemon restart or crash
// (the sessions left running read through it) and is adopted by the next
// daemon; killed, it is started again; and a daemon that stops with no
// session leaves no lxcfs process nor mount of its own.
func TestDaemonRunsItsOwnLXCFS(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("lxcfs"); err != nil {
		t.Fatal("lxcfs is not installed: run make test-deps (apt-get install lxcfs)")
	}
	// A folder where nothing serves: the system's lxcfs, if any, is not
	// this daemon's.
	nowhere := t.TempDir()
	// After the harness's stop (cleanups run last first, so this one is
	// registered before the daemon starts): nothing of it is left.
	var state string
	t.Cleanup(func() {
		if state != "" {
			assertNoLXCFSOf(t, state)
		}
	})
	d := startDaemon(t, fmt.Sprintf("lxcfs_dir = %q\n", nowhere))
	state = d.stateDir()

	mem := int64(256)
	memTotal := func(id string) string {
		t.Helper()
		e := d.sh(t, id, `grep '^MemTotal:' /proc/meminfo`)
		return strings.Join(strings.Fields(e.Stdout+e.Stderr), " ")
	}
	want := fmt.Sprintf("MemTotal: %d kB", mem*1024)
	id := d.session(t, &api.CreateSessionRequest{MemoryMB: &mem})
	if got := memTotal(id); got != want {
		t.Fatalf("got %q, want %q\n%s", got, want, d.log())
	}
	pid := lxcfsOf(t, state)
	if pv := d.info(t).ProcView; pv.ServedBy != api.ProcViewDaemon {
		t.Errorf("info says proc_view %+v, want served by the daemon", pv)
	}
	if !strings.Contains(d.log(), "the daemon started its own") {
		t.Errorf("the daemon did not say it started its own lxcfs:\n%s", d.log())
	}
	for _, how := range daemonEnds {
		d.bounce(how)
		if got := memTotal(id); got != want {
			t.Fatalf("after a %s: got %q, want %q", how, got, want)
		}
		if p := lxcfsOf(t, state); p != pid {
			t.Errorf("after a %s: lxcfs %d, want %d adopted", how, p, pid)
		}
	}
	// Killed, it serves again (after its back-off); sandboxes started
	// from then on see their own memory.
	if err := unix.Kill(pid, unix.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool {
		p := lxcfsOfNow(state)
		return p != 0 && p != pid && lxcfsServes(filepath.Join(state, "lxcfs", "mnt"))
	})
	id2 := d.session(t, &api.CreateSessionRequest{MemoryMB: &mem})
	if got := memTotal(id2); got != want {
		t.Fatalf("after lxcfs restarted: got %q, want %q", got, want)
	}
	// A daemon that stops with no session left takes its lxcfs with it.
	for _, s := range []string{id, id2} {
		if err := d.c.DeleteSession(context.Background(), s); err != nil {
			t.Fatal(err)
		}
	}
	d.terminate()
	assertNoLXCFSOf(t, state)
	// The harness's stop needs a daemon to stop.
	d.launch()
}

// lxcfsOfNow is the pid of the lxcfs serving at the state dir's mount
// (0: none).
func lxcfsOfNow(state string) int {
	mnt := filepath.Join(state, "lxcfs", "mnt")
	found := 0
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		args := strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
		if filepath.Base(args[0]) == "lxcfs" && args[len(args)-1] == mnt {
			found, _ = strconv.Atoi(filepath.Base(filepath.Dir(p)))
		}
	}
	return found
}

// lxcfsOf is the pid of the one lxcfs serving at the state dir's mount.
func lxcfsOf(t *testing.T, state string) int {
	t.Helper()
	pid := lxcfsOfNow(state)
	if pid == 0 {
		t.Fatalf("no lxcfs runs on %s", state)
	}
	return pid
}

// assertNoLXCFSOf checks no lxcfs process nor mount of the daemon of
// state is left, and removes what is.
func assertNoLXCFSOf(t *testing.T, state string) {
	t.Helper()
	if pid := lxcfsOfNow(state); pid != 0 {
		t.Errorf("lxcfs %d of the daemon is left running", pid)
		_ = unix.Kill(pid, unix.SIGKILL)
	}
	mounts, err := mountinfo.GetMounts(mountinfo.PrefixFilter(state))
	if err != nil {
		t.Error(err)
		return
	}
	for _, m := range mounts {
		t.Errorf("mount left: %s (%s)", m.Mountpoint, m.FSType)
		_ = unix.Unmount(m.Mountpoint, unix.MNT_DETACH)
	}
}
