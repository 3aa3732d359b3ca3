// Package systemd is what sandboxd does as a systemd service: readiness,
// status and watchdog notifications (sd_notify), the API socket passed by
// socket activation, and structured logs to journald. Outside systemd
// every part of it is a no-op.
package systemd

import (
	"context"
	"log/slog"
	"os"
	"time"

	"github.com/coreos/go-systemd/v22/daemon"
)

// Ready tells systemd the API serves (Type=notify), with a status line.
func Ready(status string) { notify(daemon.SdNotifyReady + "\nSTATUS=" + status) }

// Stopping tells systemd the daemon is shutting down.
func Stopping() { notify(daemon.SdNotifyStopping + "\nSTATUS=shutting down") }

// notify sends a state. NOTIFY_SOCKET stays in the daemon's environment for
// the next one; sandboxes never see it (their environment is built, not
// inherited).
func notify(state string) {
	if _, err := daemon.SdNotify(false, state); err != nil {
		slog.Warn("sd_notify", "state", state, "err", err)
	}
}

// StatusInterval is how often Watch refreshes the status line when the
// unit has no watchdog.
const StatusInterval = 10 * time.Second

// Watch refreshes the unit's status line from status until ctx ends, and,
// when the unit has WatchdogSec=, pets the watchdog at half its interval —
// only after status returned, so a daemon stuck on its own locks gets
// restarted instead of looking alive.
func Watch(ctx context.Context, status func() string) {
	if os.Getenv("NOTIFY_SOCKET") == "" {
		return // not a Type=notify service: no one to tell
	}
	every := StatusInterval
	wd, err := daemon.SdWatchdogEnabled(false)
	if err != nil {
		slog.Warn("systemd watchdog", "err", err)
	}
	if wd > 0 {
		every = min(every, wd/2)
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		state := "STATUS=" + status()
		if wd > 0 {
			state += "\n" + daemon.SdNotifyWatchdog
		}
		notify(state)
	}
}
