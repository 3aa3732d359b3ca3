package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"
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
