package testutil

import (
	"syscall"
	"testing"
	"time"
)

// WaitProcessGone waits until process pid is gone (reaped), failing the
// test after within.
func WaitProcessGone(t testing.TB, pid int, within time.Duration) {
	t.Helper()
	WaitFor(t, within, func() bool { return syscall.Kill(pid, 0) != nil }, "process %d still runs", pid)
}
