package runc

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/sandboxd/sandboxd/isolation/selfinit"
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
	// A stand-in that answers --version as this build's sandboxd-init.
	body := fmt.Sprintf("#!/bin/sh\n[ \"$1\" = --version ] && echo 'sandboxd-init %s'\n", selfinit.Identity())
	p := filepath.Join(t.TempDir(), "sandboxd-init")
	if err := os.WriteFile(p, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := HandOffInit(p); err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("/proc/%d/fd/%d", os.Getpid(), initCopy.Fd()); os.Args[0] != want {
		t.Fatalf("ARGV0 %q, want %q", os.Args[0], want)
	}
	if b, err := os.ReadFile(os.Args[0]); err != nil || string(b) != body {
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

// TestHandOffInitRefuses: an init binary of another build, or one that
// does not run, is not handed off to.
func TestHandOffInitRefuses(t *testing.T) {
	argv0 := os.Args[0]
	t.Cleanup(func() { os.Args[0] = argv0 })
	for name, body := range map[string]string{
		"another build": "#!/bin/sh\necho 'sandboxd-init 0.0.1 runc v1.0.0'\n",
		"does not run":  "\x7fELF not really",
	} {
		p := filepath.Join(t.TempDir(), "sandboxd-init")
		if err := os.WriteFile(p, []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := HandOffInit(p); err == nil || os.Args[0] != argv0 || initCopy != nil {
			t.Errorf("%s: %v, ARGV0 %q", name, err, os.Args[0])
		} else {
			t.Logf("%s: %v", name, err)
		}
	}
}
