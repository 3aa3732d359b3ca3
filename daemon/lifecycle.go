package daemon

import (
	"context"
	"fmt"
	"time"

	"github.com/containerd/errdefs"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/daemon/config"
	sess "github.com/sandboxd/sandboxd/daemon/session"
	"github.com/sandboxd/sandboxd/internal/identity"
	"github.com/sandboxd/sandboxd/internal/logging"
)

// StopSession ends the session's processes and frees its cgroup, keeping
// its workspace. Stopping a stopped session is not an error.
func (d *Daemon) StopSession(ctx context.Context, id string) (*api.Session, error) {
	return d.lifecycle(ctx, id, opStop, func(s *session) error {
		return d.stopSession(ctx, s, "stopped by request")
	})
}

// StartSession gives a stopped (or failed) session a fresh interpreter over
// the same workspace. Starting a running session changes nothing; a
// paused one resumes.
func (d *Daemon) StartSession(ctx context.Context, id string) (*api.Session, error) {
	return d.lifecycle(ctx, id, opStart, func(s *session) error {
		if s.Paused() != nil {
			return d.resumeSession(ctx, s)
		}
		if st, _ := s.Status(); st == sess.Hibernated {
			return d.State().Snapshots.wake(ctx, s)
		}
		if s.Sandbox() != nil {
			return nil
		}
		t := d.clock.Now()
		if err := checkLifetime(&d.cfg, s, t); err != nil {
			return err
		}
		clearPassedDeadline(s, t)
		return d.restartSandbox(ctx, s, api.ActionStarted, "")
	})
}

// RestartSession replaces the session's sandbox with a fresh one.
func (d *Daemon) RestartSession(ctx context.Context, id string) (*api.Session, error) {
	return d.lifecycle(ctx, id, opStart, func(s *session) error {
		t := d.clock.Now()
		if err := checkLifetime(&d.cfg, s, t); err != nil {
			return err
		}
		clearPassedDeadline(s, t)
		if err := d.State().Snapshots.forgetHibernation(s.ID()); err != nil {
			return err
		}
		return d.restartSandbox(ctx, s, api.ActionRestarted, "")
	})
}

// checkLifetime refuses to run a session older than max_session_lifetime_s
// at t: its files stay readable until it is deleted.
func checkLifetime(c *config.Config, s *session, t time.Time) error {
	if expired(c, s, t) {
		return api.Errorf(errdefs.ErrConflict, "session %s has reached the maximum session lifetime of %d s: copy out what you need and delete it", s.snapshot().ID, c.MaxSessionLifetimeS)
	}
	return nil
}

// expired says whether a session is older than max_session_lifetime_s
// at t.
func expired(c *config.Config, s *session, t time.Time) bool {
	if c.MaxSessionLifetimeS <= 0 {
		return false
	}
	rec := s.Snapshot()
	age := t.Sub(rec.CreatedAt) - time.Duration(rec.PausedS*float64(time.Second))
	if !rec.PausedAt.IsZero() {
		age -= t.Sub(rec.PausedAt)
	}
	return age > time.Duration(c.MaxSessionLifetimeS)*time.Second
}

// lifecycle finds the caller's session, runs op on it as the one
// operation under way, and returns the result.
func (d *Daemon) lifecycle(ctx context.Context, id, name string, op func(*session) error) (*api.Session, error) {
	s, err := d.lookup(ctx, id)
	if err != nil {
		return nil, err
	}
	if err := s.Begin(ctx, name); err != nil {
		return nil, err
	}
	defer s.End()
	if err := op(s); err != nil {
		return nil, err
	}
	out := s.snapshot()
	return &out, nil
}

// stopSession stops the sandbox, if any, and records why. The caller
// holds the session's operation.
func (d *Daemon) stopSession(ctx context.Context, s *session, reason string) error {
	sb := s.TakeSandbox()
	if sb == nil {
		if st, _ := s.Status(); st == sess.Hibernated {
			// Its memory goes; its files stay.
			if err := d.State().Snapshots.forgetHibernation(s.ID()); err != nil {
				return err
			}
			s.SetStopped(reason)
			return d.journal.commit(ctx, s, api.ActionStopped, reason)
		}
		return nil
	}
	if err := sb.Stop(); err != nil {
		// Its processes may live on: the session cannot run as it is.
		reason := "could not stop the sandbox: " + err.Error()
		s.SetFailed(reason)
		_ = d.journal.commit(ctx, s, api.ActionFailed, reason)
		return err
	}
	s.SetStopped(reason)
	d.gateway.Close(s.ID())
	if err := d.net.release(d.own, s, true); err != nil {
		logging.From(ctx).Warn("remove a stopped session's network", "session", s.ID(), "err", err)
	}
	return d.journal.commit(ctx, s, api.ActionStopped, reason)
}

// restartSandbox stops the sandbox if it runs and starts a new one,
// recording action and why. If the start fails the session is failed,
// with the reason.
func (d *Daemon) restartSandbox(ctx context.Context, s *session, action, why string) error {
	if sb := s.TakeSandbox(); sb != nil {
		if err := sb.Stop(); err != nil {
			return err
		}
		s.SetStopped("restarting")
	}
	_, owner := s.Status()
	if err := d.sessions.reserve(owner, d.cfg.MaxSessions, d.cfg.MaxSessionsPerUID); err != nil {
		return err
	}
	defer d.sessions.release(owner)
	if err := d.launch.start(ctx, s, false); err != nil {
		s.SetFailed(err.Error())
		if cerr := d.journal.commit(ctx, s, api.ActionFailed, err.Error()); cerr != nil {
			logging.From(ctx).Error("record failed session", "session", s.ID(), "err", cerr)
		}
		return err
	}
	go d.journal.watch(s, s.Sandbox())
	return d.journal.commit(ctx, s, action, why)
}

// idleOp is the operation that carries out action (config.IdleStop…) on
// session s, and its name: a session that cannot hibernate is paused.
func idleOp(d *Daemon, s *session, action string) (string, func(context.Context, *session, string) error) {
	switch action {
	case config.IdleHibernate:
		if d.rt.CanCheckpoint(runtimeOf(s.Snapshot().Runtime)) {
			return opHibernate, d.State().Snapshots.hibernate
		}
		return opPause, d.pauseSession
	case config.IdlePause:
		return opPause, d.pauseSession
	}
	return opStop, d.stopSession
}

// repairCtx is a context for work a request caused that must not die
// with it (a restart after a crash mid-exec): it keeps the request's
// values (its logger) but not its cancellation, and acts as the daemon.
func repairCtx(ctx context.Context) context.Context {
	return identity.With(context.WithoutCancel(ctx), identity.Internal())
}

// reapIdle stops sessions left unused for longer than their idle timeout,
// those past the maximum lifetime, and those past their deadline.
func (d *Daemon) reapIdle(ctx context.Context) {
	defer close(d.reaperDone)
	ctx = logging.With(identity.With(ctx, identity.Internal()), d.log)
	tick, stop := d.clock.NewTicker(time.Second)
	defer stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick:
		}
		t := d.clock.Now()
		for _, s := range d.sessions.all() {
			// A paused session's clocks stand still: neither its idle
			// timeout nor its lifetime runs.
			running, idle := s.Idle(t)
			// Past its lifetime a session stops even in the middle of an
			// execution: the limit is the operator's.
			var reason string
			action := config.IdleStop
			switch {
			case running && expired(&d.cfg, s, t):
				reason = fmt.Sprintf("reached the maximum session lifetime of %d s (max_session_lifetime_s)", d.cfg.MaxSessionLifetimeS)
			case deadlineDue(s, t):
				// The caller's own limit: paused or busy, it ends.
				reason = deadlineReason(s)
			case idle:
				reason = fmt.Sprintf("idle timeout: unused for longer than idle_timeout_s (%d s)", s.Snapshot().Limits.IdleTimeoutS)
				action = idleAction(&d.cfg, s)
			default:
				continue
			}
			op, act := idleOp(d, s, action)
			if !s.TryBegin(op) {
				continue // something else is under way; next tick
			}
			if err := act(ctx, s, reason); err != nil {
				d.log.Warn(op+" session", "session", s.ID(), "reason", reason, "err", err)
			}
			s.End()
		}
	}
}
