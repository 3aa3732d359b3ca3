package daemon

import (
	"context"
	"errors"
	"fmt"

	"github.com/sandboxd/sandboxd/api"
	sess "github.com/sandboxd/sandboxd/daemon/session"
	"github.com/sandboxd/sandboxd/isolation"
	"github.com/sandboxd/sandboxd/store"
)

// restoreSessions takes back the sandboxes of sessions recorded as
// running, which a previous daemon left running (a restart) or could not
// stop (a crash). A session whose sandbox is gone is failed, with the
// reason, and returned so that the caller can start it afresh if the
// config says so. It also returns the ids of the sandboxes taken back.
func (d *Daemon) restoreSessions(ctx context.Context) (restored map[string]bool, lost []*session) {
	restored = map[string]bool{}
	var outdated []*session
	for _, s := range d.sessions.all() {
		rec := s.Snapshot()
		st := sess.Status(rec.Status)
		if st != sess.Running && st != sess.Paused {
			continue
		}
		sb, err := d.launch.restore(ctx, s, &rec)
		if err == nil {
			// Restore thawed a paused session's sandbox to reach its
			// agent: it is frozen again, as it was.
			if st == sess.Paused {
				if err := sb.Freeze(); err != nil {
					d.log.Warn("pause a restored session again: it runs", "session", rec.ID, "err", err)
					_ = s.SetResumed() // it is paused: allowed
				}
			}
			_ = s.SetSandbox(sb) // running or paused: allowed
			restored[rec.ID] = true
			go d.journal.watch(s, sb)
			if err := d.journal.commit(ctx, s, api.ActionRestored, ""); err != nil {
				d.log.Error("record restored session", "session", rec.ID, "err", err)
			}
			continue
		}
		if errors.Is(err, isolation.ErrAgentVersion) {
			// Its agent speaks a protocol this daemon does not: the
			// interpreter restarts with this daemon's agent, /workspace
			// kept, and the next execution says state_reset.
			outdated = append(outdated, s)
			d.log.Warn("session's agent is of a protocol this daemon does not speak: restarting its interpreter", "session", rec.ID, "err", err)
			continue
		}
		if err := d.rt.Cleanup(rec.ID); err != nil {
			d.log.Warn("remove what is left of a lost sandbox", "session", rec.ID, "err", err)
		}
		if st == sess.Running && d.State().Snapshots.hibernated(rec.ID) {
			// A daemon killed once its memory was saved, before it was
			// recorded: it is hibernated.
			if err := s.SetHibernated(reasonHibernated); err == nil {
				if err := d.journal.commit(ctx, s, api.ActionHibernated, reasonHibernated); err != nil {
					d.log.Error("record hibernated session", "session", rec.ID, "err", err)
				}
				continue
			}
		}
		s.Update(func(r *store.Record) {
			if r.IDBase != 0 && (d.launch.ids == nil || !d.launch.ids.Holds(r.IDBase)) {
				r.IDBase = 0 // its ids are not ours any more
			}
		})
		reason := fmt.Sprintf("daemon restart: its sandbox was gone when the daemon started (%v); start it again", err)
		s.SetFailed(reason)
		if err := d.journal.commit(ctx, s, api.ActionLost, reason); err != nil {
			d.log.Error("record lost session", "session", rec.ID, "err", err)
		}
		lost = append(lost, s)
	}
	for _, s := range outdated {
		if err := d.rt.Cleanup(s.ID()); err != nil {
			d.log.Warn("remove the sandbox of an outdated agent", "session", s.ID(), "err", err)
		}
		s.SetStopped("restarting with this daemon's agent")
		s.SetResetUntold()
		if err := d.restartSandbox(ctx, s, api.ActionRestarted, "daemon upgrade: the session's agent was too old, so its interpreter was restarted"); err != nil {
			d.log.Error("restart a session with this daemon's agent", "session", s.ID(), "err", err)
			continue
		}
		restored[s.ID()] = true
	}
	return restored, lost
}
