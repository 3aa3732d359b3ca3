package daemon

import (
	"context"
	"os"
	"path/filepath"

	"github.com/sandboxd/sandboxd/api"
	sess "github.com/sandboxd/sandboxd/daemon/session"
	"github.com/sandboxd/sandboxd/isolation/volume"
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
		if r.IDBase != 0 && (d.ids == nil || !d.ids.Reserve(r.IDBase)) && sess.Status(r.Status) != sess.Running {
			r.IDBase = 0
			if err := d.store.PutSession(r); err != nil {
				return err
			}
		}
		d.sessions.add(loadSession(r))
	}
	if err := d.reconcileDisks(ctx); err != nil {
		return err
	}
	d.tmpl.Reconcile()
	d.reconcileGateways()
	if err := d.reconcileNetworks(ctx); err != nil {
		return err
	}
	restored, lost := d.restoreSessions(ctx)
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
	if d.cfg.RestartLostSessions {
		d.restartLost(ctx, lost)
	}
	return nil
}

// reconcileDisks mounts each session's filesystem again (after a reboot,
// files are served even while a session is stopped) and removes session
// folders no record owns: what a daemon killed during a create or a delete
// left behind.
func (d *Daemon) reconcileDisks(ctx context.Context) error {
	ents, err := os.ReadDir(filepath.Join(d.cfg.DataDir, "sessions"))
	if err != nil {
		return err
	}
	for _, e := range ents {
		if _, ok := d.sessions.get(e.Name()); ok {
			continue
		}
		if err := volume.Remove(d.paths.session(e.Name())); err != nil {
			d.log.Warn("remove orphan session folder", "session", e.Name(), "err", err)
		} else {
			d.log.Info("removed orphan session folder", "session", e.Name())
		}
	}
	for _, s := range d.sessions.all() {
		rec := s.Snapshot()
		// A disk whose image is gone is made again only if the data dir
		// can hold it (ensureDisk); one that exists is counted as promised.
		if err := d.ensureDisk(ctx, rec.ID, rec.Limits.DiskMB, sessionDisk(rec.OwnerUID)); err != nil {
			d.log.Warn("session disk", "session", rec.ID, "err", err)
			if sb := s.SetFailed("its disk could not be mounted: " + err.Error()); sb != nil {
				_ = sb.Stop()
			}
			if err := d.commit(ctx, s, api.ActionFailed, "its disk could not be mounted: "+err.Error()); err != nil {
				return err
			}
		}
	}
	return nil
}
