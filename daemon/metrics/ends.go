package metrics

import (
	"strings"

	"github.com/sandboxd/sandboxd/api"
	sess "github.com/sandboxd/sandboxd/daemon/session"
	"github.com/sandboxd/sandboxd/isolation"
)

// The classes of sandboxd_session_end_reasons_total: a fixed set, so that
// a reason's free text (an exit status, an error) never becomes a label.
const (
	endStopped  = "stopped"  // stopped by request
	endIdle     = "idle"     // its idle timeout (idle_action "stop")
	endLifetime = "lifetime" // max_session_lifetime_s
	endDeadline = "deadline" // its own deadline (deadline_s)
	endShutdown = "shutdown" // the daemon stopped it as it shut down
	endDeleted  = "deleted"  // deleted while running or paused
	endOOM      = "oom"      // its sandbox died killed for memory
	endLost     = "lost"     // its sandbox did not survive a daemon restart
	endFailed   = "failed"   // anything else that ended it against its will
)

var endClasses = []string{endStopped, endIdle, endLifetime, endDeadline, endShutdown, endDeleted, endOOM, endLost, endFailed}

// The reasons the daemon's own stops give (daemon/lifecycle.go,
// daemon/daemon.go): how a stop's reason is told apart. The daemon's
// TestSessionEndReasons drives each.
const (
	ReasonIdlePrefix     = "idle timeout"
	ReasonLifetimePrefix = "reached the maximum session lifetime"
	ReasonDeadlinePrefix = "reached its deadline"
	ReasonShutdown       = "the daemon shut down"
)

// oomReason is the reason of a session whose sandbox the kernel killed for
// memory (the daemon's watch: the sandbox's exit, said).
var oomReason = isolation.ExitInfo{OOM: true}.String()

// endClass is the class of a session's end, from the action committed
// and its reason.
func endClass(action, reason string) string {
	switch action {
	case api.ActionLost:
		return endLost
	case api.ActionOOM:
		return endOOM
	case api.ActionDeleted:
		return endDeleted
	case api.ActionFailed:
		if reason == oomReason {
			return endOOM
		}
		return endFailed
	}
	switch {
	case strings.HasPrefix(reason, ReasonIdlePrefix):
		return endIdle
	case strings.HasPrefix(reason, ReasonLifetimePrefix):
		return endLifetime
	case strings.HasPrefix(reason, ReasonDeadlinePrefix):
		return endDeadline
	case reason == ReasonShutdown:
		return endShutdown
	default:
		return endStopped
	}
}

// SessionEnded counts a session's end (the daemon's commit: a stop, a
// failure, a loss), by its event's action and by the class of its reason.
func (m *Metrics) SessionEnded(action, reason string) {
	m.ended.WithLabelValues(action).Inc()
	m.countEnd(action, reason)
}

// countEnd counts a session's end in its class.
func (m *Metrics) countEnd(action, reason string) {
	m.endReasons.WithLabelValues(endClass(action, reason)).Inc()
}

// SessionDeleted counts the end of a session deleted while it ran, was
// paused or hibernated (was, its status then); one deleted after it
// stopped had its end counted then.
func (m *Metrics) SessionDeleted(was sess.Status) {
	if was == sess.Running || was == sess.Paused || was == sess.Hibernated {
		m.countEnd(api.ActionDeleted, "")
	}
}
