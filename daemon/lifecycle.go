package daemon

import (
	"context"
	"time"

	"github.com/containerd/errdefs"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/internal/logging"
)

// StopSession ends the session's processes and frees its cgroup, keeping
// its workspace. Stopping a stopped session is not an error.
func (d *Daemon) StopSession(ctx context.Context, id string) (*api.Session, error) {
	return d.lifecycle(ctx, id, func(s *session) error {
		return d.stopSession(ctx, s, "stopped by request")
	})
}

// StartSession gives a stopped (or failed) session a fresh interpreter over
// the same workspace. Starting a running session changes nothing.
func (d *Daemon) StartSession(ctx context.Context, id string) (*api.Session, error) {
	return d.lifecycle(ctx, id, func(s *session) error {
		s.mu.Lock()
		running := s.sb != nil
		s.mu.Unlock()
		if running {
			return nil
		}
		if err := d.checkLifetime(s); err != nil {
			return err
		}
		return d.restartSandbox(ctx, s)
	})
}

// RestartSession replaces the session's sandbox with a fresh one.
func (d *Daemon) RestartSession(ctx context.Context, id string) (*api.Session, error) {
	return d.lifecycle(ctx, id, func(s *session) error {
		if err := d.checkLifetime(s); err != nil {
			return err
		}
		return d.restartSandbox(ctx, s)
	})
}

// checkLifetime refuses to run a session older than max_session_lifetime_s:
// its files stay readable until it is deleted.
func (d *Daemon) checkLifetime(s *session) error {
	if d.expired(s) {
		return api.Errorf(errdefs.ErrConflict, "session %s has reached the maximum session lifetime of %d s: copy out what you need and delete it", s.snapshot().ID, d.cfg.MaxSessionLifetimeS)
	}
	return nil
}

// expired says whether a session is older than max_session_lifetime_s.
func (d *Daemon) expired(s *session) bool {
	if d.cfg.MaxSessionLifetimeS <= 0 {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return time.Since(s.rec.CreatedAt) > time.Duration(d.cfg.MaxSessionLifetimeS)*time.Second
}

// lifecycle finds the caller's session, applies op, and returns the result.
func (d *Daemon) lifecycle(ctx context.Context, id string, op func(*session) error) (*api.Session, error) {
	s, err := d.lookup(ctx, id)
	if err != nil {
		return nil, err
	}
	if err := op(s); err != nil {
		return nil, err
	}
	out := s.snapshot()
	return &out, nil
}

// stopSession destroys the sandbox, if any, and records why.
func (d *Daemon) stopSession(ctx context.Context, s *session, reason string) error {
	s.mu.Lock()
	sb := s.sb
	s.sb = nil
	if s.rec.Status == api.StatusRunning {
		s.rec.Status = api.StatusStopped
		s.rec.Reason = reason
	}
	rec := *s.rec
	s.mu.Unlock()
	if sb != nil {
		if err := sb.Destroy(); err != nil {
			return err
		}
		logging.From(ctx).Info("session stopped", "session", rec.ID, "reason", reason)
	}
	if d.isPersistent(rec.ID) {
		return d.store.PutSession(&rec)
	}
	return nil
}

// restartSandbox stops the sandbox if it runs and starts a new one. If the
// start fails the session is marked failed with the reason.
func (d *Daemon) restartSandbox(ctx context.Context, s *session) error {
	if err := d.stopSession(ctx, s, "restarting"); err != nil {
		return err
	}
	s.mu.Lock()
	owner := s.rec.OwnerUID
	s.mu.Unlock()
	if err := d.reserve(owner); err != nil {
		return err
	}
	defer d.release(owner)
	err := d.startSandbox(ctx, s, false)
	s.mu.Lock()
	if err != nil {
		s.rec.Status = api.StatusFailed
		s.rec.Reason = err.Error()
	}
	rec := *s.rec
	s.mu.Unlock()
	if d.isPersistent(rec.ID) {
		if perr := d.store.PutSession(&rec); perr != nil && err == nil {
			err = perr
		}
	}
	return err
}

// reapIdle stops sessions left unused for longer than their idle timeout.
func (d *Daemon) reapIdle(ctx context.Context) {
	defer close(d.reaperDone)
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		d.mu.Lock()
		var idle, old []*session
		for _, s := range d.sessions {
			s.mu.Lock()
			lim := time.Duration(s.rec.Limits.IdleTimeoutS) * time.Second
			running := s.sb != nil
			if running && lim > 0 && time.Since(s.rec.LastUsedAt) > lim && !s.busy {
				idle = append(idle, s)
			}
			s.mu.Unlock()
			// Past its lifetime a session stops even in the middle of an
			// execution: the limit is the operator's.
			if running && d.expired(s) {
				old = append(old, s)
			}
		}
		d.mu.Unlock()
		for _, s := range idle {
			if err := d.stopSession(ctx, s, "idle for longer than idle_timeout_s"); err != nil {
				d.log.Warn("stop idle session", "session", s.snapshot().ID, "err", err)
			}
		}
		for _, s := range old {
			if err := d.stopSession(ctx, s, "reached the maximum session lifetime (max_session_lifetime_s)"); err != nil {
				d.log.Warn("stop expired session", "session", s.snapshot().ID, "err", err)
			}
		}
	}
}
