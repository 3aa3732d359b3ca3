package lxcfs

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestOwnNeedsALiveLXCFS checks a program that exits at once (no lxcfs)
// is no daemon's lxcfs: StartOwn says so, and leaves no pid file.
func TestOwnNeedsALiveLXCFS(t *testing.T) {
	dir := t.TempDir()
	if _, err := StartOwn(dir, "/bin/false", slog.New(slog.DiscardHandler)); err == nil || !strings.Contains(err.Error(), "exited at start") {
		t.Fatalf("StartOwn with /bin/false: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "lxcfs.pid")); err == nil {
		t.Error("a pid file is left")
	}
}

// TestIsLXCFS checks only a live lxcfs of the given mount is taken for
// the daemon's: not another program, nor a pid that is gone.
func TestIsLXCFS(t *testing.T) {
	if !alive(os.Getpid()) {
		t.Error("this process is not alive")
	}
	if isLXCFS(os.Getpid(), "/nowhere") {
		t.Error("the test binary taken for lxcfs")
	}
	if alive(1<<22 + 1) {
		t.Error("a pid above pid_max is alive")
	}
}
