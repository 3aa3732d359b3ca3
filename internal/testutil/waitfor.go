package testutil

import (
	"testing"
	"time"
)

// WaitFor polls cond until it holds, and fails the test (format and args
// say what did not happen) if it still does not after within. The polls
// start a millisecond apart, for what is nearly there, and slow to 50 ms,
// for what takes a while on a loaded host.
func WaitFor(t testing.TB, within time.Duration, cond func() bool, format string, args ...any) {
	t.Helper()
	deadline := time.Now().Add(within)
	for pause := time.Millisecond; !cond(); pause = min(2*pause, 50*time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("after %s: "+format, append([]any{within}, args...)...)
		}
		time.Sleep(pause)
	}
}
