package daemon

import (
	"context"
	"strings"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/daemon/disk"
	sess "github.com/sandboxd/sandboxd/daemon/session"
)

// reconcile makes the database and the host agree at start: session
// disks are mounted, sessions recorded as running get their sandboxes back
// (live restore) or are marked failed, and sandboxes and folders that
// belong to no session are removed. Nothing of a live session is touched.
func (d *Daemon) reconcile(ctx context.Context) error {
	recs, err := d.store.Sessions()
	if err != nil {
		return err
	}
	for _, r := range recs {
		// A running sandbox keeps the ids it runs with, whatever the
		// config says now; the others get new ones (and their files a new
		// owner) at start if user namespaces were turned off or the range
		// moved.
		if r.IDBase != 0 && (d.launch.ids == nil || !d.launch.ids.Reserve(r.IDBase)) && sess.Status(r.Status) != sess.Running {
			r.IDBase = 0
			if err := d.store.PutSession(r); err != nil {
				return err
			}
		}
		d.sessions.add(loadSession(r))
	}
	// Each session's filesystem is mounted again, within the data dir's
	// budget; folders no record owns go (package disk).
	all := d.sessions.all()
	disks := make([]disk.Disk, 0, len(all))
	for _, s := range all {
		rec := s.Snapshot()
		disks = append(disks, disk.Disk{ID: rec.ID, MB: rec.Limits.DiskMB, Owner: rec.OwnerUID})
	}
	vols, err := d.store.Volumes()
	if err != nil {
		return err
	}
	disks = append(disks, volumeDisks(vols)...)
	if err := d.disk.Reconcile(ctx, disks, func(id string, err error) error {
		if strings.HasPrefix(id, disk.VolumePrefix) {
			// Its sessions fail to start, saying why; its record stays.
			d.log.Warn("a volume's disk could not be mounted", "volume", id, "err", err)
			return nil
		}
		s, _ := d.sessions.get(id)
		if sb := s.SetFailed("its disk could not be mounted: " + err.Error()); sb != nil {
			_ = sb.Stop()
		}
		return d.journal.commit(ctx, s, api.ActionFailed, "its disk could not be mounted: "+err.Error())
	}); err != nil {
		return err
	}
	if err := d.State().Snapshots.reconcile(ctx); err != nil {
		return err
	}
	d.tmpl.Reconcile()
	d.gateway.Reconcile(func(id string) bool { _, ok := d.sessions.get(id); return ok })
	if d.net.owner != nil {
		if err := d.net.owner.Reconcile(ctx, netRecords(d.sessions.all())); err != nil {
			return err
		}
	}
	restored, lost := d.restoreSessions(ctx)
	if err := d.State().Snapshots.reconcileHibernated(ctx); err != nil {
		return err
	}
	left, err := d.rt.Leftovers()
	if err != nil {
		return err
	}
	for _, id := range left {
		if restored[id] {
			continue
		}
		if err := d.rt.Cleanup(id); err != nil {
			d.log.Warn("remove leftover sandbox", "session", id, "err", err)
		} else {
			d.log.Info("removed leftover sandbox", "session", id)
		}
	}
	if !d.cfg.RestartLostSessions {
		return nil
	}
	for _, s := range lost {
		if !s.TryBegin(opStart) {
			continue
		}
		if err := d.restartSandbox(ctx, s, api.ActionStarted, "restart_lost_sessions: started again after its sandbox was lost"); err != nil {
			d.log.Error("restart lost session", "session", s.ID(), "err", err)
		}
		s.End()
	}
	return nil
}
