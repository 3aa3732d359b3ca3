package idmount

import (
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// as runs fn with the file-system ids of uid (and gid uid), on this
// thread alone.
func as(uid int, fn func() error) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	unix.Setfsgid(uid)
	unix.Setfsuid(uid)
	defer func() {
		unix.Setfsuid(0)
		unix.Setfsgid(0)
	}()
	return fn()
}

func owner(t *testing.T, path string) (int, int) {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Lstat(path, &st); err != nil {
		t.Fatal(err)
	}
	return int(st.Uid), int(st.Gid)
}

// TestMount: one folder through two mounts of two id blocks; a file made
// as block A's user 1000 is 1000 on disk and block B's user 1000 through
// B's mount; read-only refuses writes.
func TestMount(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("idmapped mounts need root: run the root tier (make test)")
	}
	dir := t.TempDir()
	for _, d := range []string{filepath.Dir(dir), dir} {
		if err := os.Chmod(d, 0o711); err != nil { // the sandboxes' users pass through
			t.Fatal(err)
		}
	}
	src, a, b, ro := filepath.Join(dir, "src"), filepath.Join(dir, "a"), filepath.Join(dir, "b"), filepath.Join(dir, "ro")
	for _, d := range []string{src, a, b, ro} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, m := range []struct {
		dst  string
		base uint32
		ro   bool
	}{{a, 100000, false}, {b, 200000, false}, {ro, 200000, true}} {
		if err := Mount(src, m.dst, m.base, 65536, m.ro); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = unix.Unmount(m.dst, unix.MNT_DETACH) })
	}
	// The volume's root is its user's, as the sandbox sees it (1000).
	if err := os.Chown(src, 1000, 1000); err != nil {
		t.Fatal(err)
	}
	if err := as(101000, func() error { return os.WriteFile(filepath.Join(a, "f"), []byte("x"), 0o644) }); err != nil {
		t.Fatal(err)
	}
	// Host ids outside the block have no id on disk: refused.
	if err := os.WriteFile(filepath.Join(a, "root"), nil, 0o644); err == nil {
		t.Error("host root wrote through a sandbox's mount")
	}
	if u, g := owner(t, filepath.Join(src, "f")); u != 1000 || g != 1000 {
		t.Errorf("on disk: %d:%d, want 1000:1000", u, g)
	}
	if u, g := owner(t, filepath.Join(b, "f")); u != 201000 || g != 201000 {
		t.Errorf("through b: %d:%d, want 201000:201000", u, g)
	}
	if err := os.WriteFile(filepath.Join(ro, "g"), nil, 0o644); err == nil {
		t.Error("a read-only mount took a write")
	}
}
