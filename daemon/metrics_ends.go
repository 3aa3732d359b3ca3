package daemon

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
	endShutdown = "shutdown" // the daemon stopped it as it shut down
	endDeleted  = "deleted"  // deleted while running or paused
	endOOM      = "oom"      // its sandbox died killed for memory
	endLost     = "lost"     // its sandbox did not survive a daemon restart
	endFailed   = "failed"   // anything else that ended it against its will
)

var endClasses = []string{endStopped, endIdle, endLifetime, endShutdown, endDeleted, endOOM, endLost, endFailed}

// The reasons the daemon's own stops give (lifecycle.go, daemon.go): how
// a stop's reason is told apart. TestSessionEndReasons drives each.
const (
	reasonIdlePrefix     = "idle timeout"
	reasonLifetimePrefix = "reached the maximum session lifetime"
	reasonShutdown       = "the daemon shut down"
)

// oomReason is the reason of a session whose sandbox the kernel killed for
// memory (watch: the sandbox's exit, said).
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
	case strings.HasPrefix(reason, reasonIdlePrefix):
		return endIdle
	case strings.HasPrefix(reason, reasonLifetimePrefix):
		return endLifetime
	case reason == reasonShutdown:
		return endShutdown
	default:
		return endStopped
	}
}

// countEnd counts a session's end (commit: a stop, a failure, a loss).
func (m *metrics) countEnd(action, reason string) {
	m.endReasons.WithLabelValues(endClass(action, reason)).Inc()
}

// countDeleted counts the end of a session deleted while it ran or was
// paused; one deleted after it stopped had its end counted then.
func (m *metrics) countDeleted(s *session) {
	if st, _ := s.Status(); st == sess.Running || st == sess.Paused {
		m.countEnd(api.ActionDeleted, "")
	}
}
