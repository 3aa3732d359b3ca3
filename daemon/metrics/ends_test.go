package metrics

import (
	"testing"

	"github.com/sandboxd/sandboxd/api"
	sess "github.com/sandboxd/sandboxd/daemon/session"
	"github.com/sandboxd/sandboxd/internal/testutil"
)

// TestEndClass: the class of every reason the daemon gives, and of ones
// it does not know.
func TestEndClass(t *testing.T) {
	for _, tc := range []struct{ action, reason, want string }{
		{api.ActionStopped, "stopped by request", endStopped},
		{api.ActionStopped, "something new", endStopped},
		{api.ActionStopped, ReasonShutdown, endShutdown},
		{api.ActionStopped, "idle timeout: unused for longer than idle_timeout_s (5 s)", endIdle},
		{api.ActionStopped, "reached the maximum session lifetime of 4 s (max_session_lifetime_s)", endLifetime},
		{api.ActionFailed, "out of memory", endOOM},
		{api.ActionFailed, "sandbox exited: signal 9", endFailed},
		{api.ActionFailed, "could not stop the sandbox: busy", endFailed},
		{api.ActionLost, "sandbox exited", endLost},
		{api.ActionOOM, "", endOOM},
		{api.ActionDeleted, "", endDeleted},
	} {
		if got := endClass(tc.action, tc.reason); got != tc.want {
			t.Errorf("%s %q: %s, want %s", tc.action, tc.reason, got, tc.want)
		}
	}
}

// TestEndsCounted: every class is a series from the start; an end counts
// in its class and under its action; a delete counts only for a session
// that still ran or was paused.
func TestEndsCounted(t *testing.T) {
	m := New()
	for _, r := range endClasses {
		if v := testutil.Value(t, m.Registry(), "sandboxd_session_end_reasons_total", "reason", r); v != 0 {
			t.Fatalf("%s starts at %v", r, v)
		}
	}
	m.SessionEnded(api.ActionFailed, oomReason)
	m.SessionEnded(api.ActionStopped, ReasonShutdown)
	m.SessionDeleted(sess.Running)
	m.SessionDeleted(sess.Paused)
	m.SessionDeleted(sess.Stopped)
	m.SessionDeleted(sess.Failed)
	for r, want := range map[string]float64{endOOM: 1, endShutdown: 1, endDeleted: 2, endStopped: 0, endFailed: 0} {
		if got := testutil.Value(t, m.Registry(), "sandboxd_session_end_reasons_total", "reason", r); got != want {
			t.Errorf("%s: %v, want %v", r, got, want)
		}
	}
	if got := testutil.Value(t, m.Registry(), "sandboxd_session_ends_total", "action", api.ActionFailed); got != 1 {
		t.Errorf("ends by action failed: %v", got)
	}
	if _, ok := testutil.Scrape(t, m.Registry(), "sandboxd_session_ends_total", "action", api.ActionDeleted); ok {
		t.Error("a delete counted under the ends by action")
	}
}
