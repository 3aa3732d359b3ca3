package daemon

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/containerd/errdefs"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/daemon/config"
	sess "github.com/sandboxd/sandboxd/daemon/session"
	"github.com/sandboxd/sandboxd/internal/logging"
)

// pauseReadyWait bounds a pause's wait for a session's interpreter to
// finish starting (cold: tens of milliseconds; a loaded host: seconds).
const pauseReadyWait = 10 * time.Second

// PauseSession freezes every process of the session (the cgroup
// freezer): memory and interpreter state stay, CPU use stops, and so do
// its idle and lifetime clocks. Pausing a paused session changes nothing.
func (d *Daemon) PauseSession(ctx context.Context, id string) (*api.Session, error) {
	return d.lifecycle(ctx, id, opPause, func(s *session) error {
		return d.pauseSession(ctx, s, "paused by request")
	})
}

// ResumeSession lets a paused session run on where it stopped, and wakes
// a hibernated one. Resuming a running session changes nothing; a
// stopped one must be started.
func (d *Daemon) ResumeSession(ctx context.Context, id string) (*api.Session, error) {
	return d.lifecycle(ctx, id, opResume, func(s *session) error {
		if st, _ := s.Status(); st == sess.Hibernated {
			return d.State().Snapshots.wake(ctx, s)
		}
		return d.resumeSession(ctx, s)
	})
}

// pauseSession freezes the session's sandbox. The caller holds the
// session's operation.
func (d *Daemon) pauseSession(ctx context.Context, s *session, reason string) error {
	sb, err := s.Pausable()
	if err != nil || sb == nil {
		return err
	}
	// A session made an instant ago may still be starting its
	// interpreter: the pause freezes it whole. One that does not answer
	// is frozen as it is.
	rctx, cancel := context.WithTimeout(ctx, pauseReadyWait)
	err = sb.Ready(rctx)
	cancel()
	if err != nil {
		logging.From(ctx).Debug("pause a session whose interpreter did not say it is ready", "session", s.ID(), "err", err)
	}
	if err := sb.Freeze(); err != nil {
		_ = sb.Thaw() // not half frozen
		return fmt.Errorf("pause session %s: %w", s.ID(), err)
	}
	if err := s.SetPaused(reason); err != nil {
		_ = sb.Thaw()
		return err
	}
	return d.journal.commit(ctx, s, api.ActionPaused, reason)
}

// resumeSession thaws a paused session's sandbox. The caller holds the
// session's operation.
func (d *Daemon) resumeSession(ctx context.Context, s *session) error {
	sb := s.Paused()
	if sb == nil {
		if st, _ := s.Status(); st != sess.Running {
			return api.Errorf(errdefs.ErrConflict, "session %s is %s: start it", s.ID(), st)
		}
		return nil
	}
	if err := sb.Thaw(); err != nil {
		return fmt.Errorf("resume session %s: %w", s.ID(), err)
	}
	if err := s.SetResumed(); err != nil {
		return err
	}
	return d.journal.commit(ctx, s, api.ActionResumed, "")
}

// awake resumes the session if it is paused, and wakes it if it is
// hibernated: an execution, a file call, stats or a port on such a
// session resumes it first.
func (d *Daemon) awake(ctx context.Context, s *session) error {
	st, _ := s.Status()
	if st == sess.Hibernated {
		return d.State().Snapshots.awake(ctx, s)
	}
	if st != sess.Paused {
		return nil
	}
	if err := s.Begin(ctx, opResume); err != nil {
		return err
	}
	defer s.End()
	if s.Paused() == nil {
		return nil // resumed, stopped or deleted meanwhile
	}
	return d.resumeSession(ctx, s)
}

// lookupAwake is lookup, then awake.
func (d *Daemon) lookupAwake(ctx context.Context, id string) (*session, error) {
	s, err := d.lookup(ctx, id)
	if err != nil {
		return nil, err
	}
	return s, d.awake(ctx, s)
}

// claimAwake claims the session for an execution, resuming it first if it
// is paused (again, if it was paused meanwhile).
func (d *Daemon) claimAwake(ctx context.Context, s *session) (Sandbox, bool, error) {
	for {
		if err := d.awake(ctx, s); err != nil {
			return nil, false, err
		}
		sb, reset, err := s.ClaimExec(ctx)
		if !errors.Is(err, sess.ErrPaused) {
			return sb, reset, err
		}
	}
}

// idleAction is what the session's idle timeout does.
func idleAction(c *config.Config, s *session) string {
	a := s.Snapshot().IdleAction
	if a == "" {
		a = c.IdleAction
	}
	return a
}

// checkIdleAction checks a create's idle_action.
func checkIdleAction(a string) error {
	switch a {
	case "", config.IdleStop, config.IdlePause, config.IdleHibernate:
		return nil
	}
	return api.Errorf(errdefs.ErrInvalidArgument, "idle_action %s: use %q, %q or %q", api.Quote(a), config.IdleStop, config.IdlePause, config.IdleHibernate)
}
