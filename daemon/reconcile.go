package daemon

import (
	"context"

	"github.com/sandboxd/sandboxd/api"
)

// reconcile makes the database and the host agree at start. Sandboxes do
// not yet survive the daemon, so every one found is removed, and a session
// the database still calls running is marked stopped with the reason: its
// workspace is kept and `start` brings it back.
func (d *Daemon) reconcile(_ context.Context) error {
	recs, err := d.store.Sessions()
	if err != nil {
		return err
	}
	left, err := d.rt.Leftovers()
	if err != nil {
		return err
	}
	for _, id := range left {
		if err := d.rt.Cleanup(id); err != nil {
			d.log.Warn("remove leftover sandbox", "session", id, "err", err)
		} else {
			d.log.Info("removed leftover sandbox", "session", id)
		}
	}
	for _, r := range recs {
		if r.IDBase != 0 && (d.ids == nil || !d.ids.Reserve(r.IDBase)) {
			// User namespaces were turned off, or the range moved: the
			// session gets new ids (and its files their owner) at start.
			r.IDBase = 0
			if err := d.store.PutSession(r); err != nil {
				return err
			}
		}
		if r.Status == api.StatusRunning {
			r.Status = api.StatusStopped
			r.Reason = "the daemon restarted while the session was running; start it again"
			if err := d.store.PutSession(r); err != nil {
				return err
			}
		}
		d.sessions[r.ID] = &session{rec: r}
	}
	return nil
}
