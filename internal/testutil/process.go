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
	deadline := time.Now().Add(within)
	for syscall.Kill(pid, 0) == nil {
		if time.Now().After(deadline) {
			t.Fatalf("process %d still runs after %s", pid, within)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
