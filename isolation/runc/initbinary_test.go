package runc

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// TestHandOffInit checks the init binary's copy: the same bytes, sealed
// against writes, named as libcontainer's ARGV0.
func TestHandOffInit(t *testing.T) {
	argv0 := os.Args[0]
	t.Cleanup(func() {
		os.Args[0] = argv0
		if initCopy != nil {
			initCopy.Close()
			initCopy = nil
		}
	})
	if err := HandOffInit(filepath.Join(t.TempDir(), "missing")); !os.IsNotExist(err) || os.Args[0] != argv0 {
		t.Fatalf("a missing binary: %v, ARGV0 %q", err, os.Args[0])
	}
	p := filepath.Join(t.TempDir(), "sandboxd-init")
	if err := os.WriteFile(p, []byte("\x7fELF not really"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := HandOffInit(p); err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("/proc/%d/fd/%d", os.Getpid(), initCopy.Fd()); os.Args[0] != want {
		t.Fatalf("ARGV0 %q, want %q", os.Args[0], want)
	}
	if b, err := os.ReadFile(os.Args[0]); err != nil || string(b) != "\x7fELF not really" {
		t.Fatalf("the copy holds %q: %v", b, err)
	}
	seals, err := unix.FcntlInt(initCopy.Fd(), unix.F_GET_SEALS, 0)
	if err != nil || seals&unix.F_SEAL_WRITE == 0 || seals&unix.F_SEAL_SEAL == 0 {
		t.Fatalf("seals %#x: %v", seals, err)
	}
	if _, err := initCopy.WriteAt([]byte("x"), 0); err == nil {
		t.Fatal("the copy took a write")
	}
}
