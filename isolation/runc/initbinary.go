package runc

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/opencontainers/runc/libcontainer/exeseal"

	"github.com/sandboxd/sandboxd/isolation/selfinit"
)

// HandOffInit makes the binary at path (sandboxd-init) the container init
// of the sandboxes this process starts, in place of the process's own
// binary (see package isolation/selfinit/handoff, whose constructor the
// process must link). It copies the binary into a sealed memory file that
// the process keeps open (libcontainer's exeseal.CloneBinary, which seals
// runc's own binary so), so that neither an upgrade of the file nor
// anything a sandbox does changes what later sandboxes start with, and
// names the copy as libcontainer's ARGV0, /proc/PID/fd/N, which the
// constructor executes. It runs the copy once first (--version): the copy
// must run where this process runs (a mount's noexec, a security module),
// and be this build's (libcontainer's two halves speak one protocol; a
// sandboxd-init left from another build is not taken). Without it (an
// error) sandboxes start with the process's own binary's init, as before.
func HandOffInit(path string) error {
	src, err := os.Open(path)
	if err != nil {
		return err
	}
	defer src.Close()
	st, err := src.Stat()
	if err != nil {
		return err
	}
	f, err := exeseal.CloneBinary(src, st.Size(), "sandboxd-init", os.TempDir())
	if err != nil {
		return fmt.Errorf("copy %s: %w", path, err)
	}
	argv0 := fmt.Sprintf("/proc/%d/fd/%d", os.Getpid(), f.Fd())
	if err := probeInit(argv0); err != nil {
		f.Close()
		return fmt.Errorf("%s: %w", path, err)
	}
	initCopy = f
	os.Args[0] = argv0
	return nil
}

// probeInit runs the init binary at argv0 with --version and checks it is
// this build's.
func probeInit(argv0 string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, argv0, selfinit.VersionArg).Output()
	if err != nil {
		return fmt.Errorf("does not run here: %w", err)
	}
	got := strings.TrimSpace(string(out))
	if want := "sandboxd-init " + selfinit.Identity(); got != want {
		return fmt.Errorf("another build: it says %q, this daemon is %q", got, want)
	}
	return nil
}

// initCopy is HandOffInit's sealed copy, open for the process's life
// (its finalizer would close it).
var initCopy *os.File
