package daemon

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/containerd/errdefs"

	"github.com/sandboxd/sandboxd/api"
	sess "github.com/sandboxd/sandboxd/daemon/session"
	"github.com/sandboxd/sandboxd/internal/durable"
	"github.com/sandboxd/sandboxd/internal/logging"
	"github.com/sandboxd/sandboxd/isolation"
)

// A hibernated session: its memory saved to disk (runsc: gVisor's image
// of the sandbox, Sandbox.Hibernate), its sandbox gone, RAM and CPU
// freed; the next execution, file call, attach, port request or start
// restores it (wake) as it was. The image is in
// <data-dir>/hibernated/<id>/memory, not on the session's disk (whose
// limit it would count against): written under <id>.new and renamed
// whole before the record says hibernated. A daemon killed in between
// finds the session's sandbox gone and the image whole, and the session
// hibernated (restoreSessions); reconcile removes a half-written one.

// reasonHibernated is the reason of a session hibernated on request.
const reasonHibernated = "hibernated by request"

// HibernateSession saves the session's memory to disk and ends its
// sandbox (runsc); hibernating a hibernated session changes nothing. A
// paused session is resumed first; a runc session answers 409.
func (sn Snapshots) HibernateSession(ctx context.Context, id string) (*api.Session, error) {
	return sn.d.lifecycle(ctx, id, opHibernate, func(s *session) error {
		if s.Paused() != nil {
			if err := sn.d.resumeSession(ctx, s); err != nil {
				return err
			}
		}
		return sn.hibernate(ctx, s, reasonHibernated)
	})
}

// hibernate saves the running session's memory and ends its sandbox.
// The caller holds the session's operation.
func (sn Snapshots) hibernate(ctx context.Context, s *session, reason string) error {
	d := sn.d
	rec := s.Snapshot()
	sb := s.Sandbox()
	switch st, _ := s.Status(); {
	case st == sess.Hibernated:
		return nil
	case !d.rt.CanCheckpoint(runtimeOf(rec.Runtime)):
		return api.Errorf(errdefs.ErrFailedPrecondition, "session %s runs on %s, which cannot save its memory: pause it instead (POST /v1/sessions/%s/pause keeps it in memory)", rec.ID, runtimeOf(rec.Runtime), rec.ID)
	case st != sess.Running || sb == nil:
		return api.Errorf(errdefs.ErrConflict, "session %s is %s: only a running session hibernates", rec.ID, st)
	}
	var used int64
	if st, err := sb.Stats(); err == nil {
		used = int64(st.MemoryBytes)
	}
	release, err := d.disk.Hold(ctx, "hibernate-"+rec.ID, used)
	if err != nil {
		return err
	}
	defer release()
	dir := d.paths.hibernation(rec.ID)
	tmp := dir + ".new"
	if err := os.RemoveAll(tmp); err != nil {
		return err
	}
	if err := os.MkdirAll(tmp, 0o700); err != nil {
		return err
	}
	t0 := time.Now()
	// Let go of the sandbox first: its end is no crash. Its image is
	// whole and the session recorded hibernated before the sandbox ends:
	// a daemon killed before that finds it running (paused, which the
	// next one resumes), after it hibernated.
	s.TakeSandbox()
	err = sb.Hibernate(ctx, filepath.Join(tmp, snapshotMemory), func() error {
		if err := durable.RenameDir(tmp, dir); err != nil {
			return err
		}
		if err := s.SetHibernated(reason); err != nil {
			return err
		}
		return d.journal.commit(ctx, s, api.ActionHibernated, reason)
	})
	if err != nil {
		_ = os.RemoveAll(tmp)
		_ = os.RemoveAll(dir)
		// Its memory was not kept: it runs on, the session's again
		// (running, from hibernated too, if the record could not say so).
		if serr := s.SetSandbox(sb); serr != nil || !sb.Alive() {
			_ = sb.Stop()
			s.SetFailed("could not hibernate: " + err.Error())
			_ = d.journal.commit(ctx, s, api.ActionFailed, "could not hibernate: "+err.Error())
		}
		var refused *isolation.CheckpointRefusedError
		if errors.As(err, &refused) {
			return api.Errorf(errdefs.ErrFailedPrecondition, "session %s cannot hibernate now: %s", rec.ID, refused.Reason)
		}
		return fmt.Errorf("hibernate session %s: %w", rec.ID, err)
	}
	if err := sb.Stop(); err != nil {
		logging.From(ctx).Warn("remove a hibernated session's sandbox", "session", rec.ID, "err", err)
	}
	d.gateway.Close(rec.ID)
	if err := d.net.release(d.own, s, true); err != nil {
		logging.From(ctx).Warn("remove a hibernated session's network", "session", rec.ID, "err", err)
	}
	logging.From(ctx).Debug("session hibernated", "session", rec.ID, "took", time.Since(t0))
	return nil
}

// wake starts a hibernated session's sandbox from its memory: a session
// whose image cannot be restored starts afresh over its files (its next
// execution says state_reset). The caller holds the session's
// operation.
func (sn Snapshots) wake(ctx context.Context, s *session) error {
	d := sn.d
	dir := d.paths.hibernation(s.ID())
	s.memory = filepath.Join(dir, snapshotMemory)
	if err := d.restartSandbox(ctx, s, api.ActionWoken, ""); err != nil {
		s.memory = ""
		return err
	}
	if err := os.RemoveAll(dir); err != nil {
		logging.From(ctx).Warn("remove a woken session's memory image", "session", s.ID(), "err", err)
	}
	return nil
}

// awake wakes the session if it is still hibernated once no other
// operation is under way.
func (sn Snapshots) awake(ctx context.Context, s *session) error {
	if err := s.Begin(ctx, opWake); err != nil {
		return err
	}
	defer s.End()
	if st, _ := s.Status(); st != sess.Hibernated {
		return nil // woken, stopped or deleted meanwhile
	}
	return sn.wake(ctx, s)
}

// forgetHibernation removes session id's memory image, if any.
func (sn Snapshots) forgetHibernation(id string) error {
	return os.RemoveAll(sn.d.paths.hibernation(id))
}

// hibernated says whether session id has a whole memory image.
func (sn Snapshots) hibernated(id string) bool {
	_, err := os.Stat(filepath.Join(sn.d.paths.hibernation(id), snapshotMemory))
	return err == nil
}

// reconcileHibernated removes the memory images no hibernated session
// owns (half written by a daemon killed meanwhile, or of a session since
// deleted), and stops a hibernated session whose image is gone.
func (sn Snapshots) reconcileHibernated(ctx context.Context) error {
	d := sn.d
	keep := map[string]bool{}
	for _, s := range d.sessions.all() {
		st, _ := s.Status()
		if st != sess.Hibernated {
			continue
		}
		if !sn.hibernated(s.ID()) {
			reason := "its saved memory is gone: start it afresh"
			s.SetStopped(reason)
			if err := d.journal.commit(ctx, s, api.ActionStopped, reason); err != nil {
				return err
			}
			continue
		}
		keep[s.ID()] = true
	}
	return removeOthers(d.paths.hibernated(), keep, func(name string, err error) {
		d.log.Warn("remove an orphan memory image", "session", name, "err", err)
	})
}

// removeOthers removes what folder dir holds but the names in keep;
// failed says which could not be removed. A missing dir holds nothing.
func removeOthers(dir string, keep map[string]bool, failed func(name string, err error)) error {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, e := range ents {
		if keep[e.Name()] {
			continue
		}
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			failed(e.Name(), err)
		}
	}
	return nil
}
