package daemon

import (
	"context"
	"time"

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
		return d.restartSandbox(ctx, s)
	})
}

// RestartSession replaces the session's sandbox with a fresh one.
func (d *Daemon) RestartSession(ctx context.Context, id string) (*api.Session, error) {
	return d.lifecycle(ctx, id, func(s *session) error { return d.restartSandbox(ctx, s) })
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
	err := d.startSandbox(ctx, s)
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
		var idle []*session
		for _, s := range d.sessions {
			s.mu.Lock()
			lim := time.Duration(s.rec.Limits.IdleTimeoutS) * time.Second
			if s.sb != nil && lim > 0 && time.Since(s.rec.LastUsedAt) > lim && !s.busy {
				idle = append(idle, s)
			}
			s.mu.Unlock()
		}
		d.mu.Unlock()
		for _, s := range idle {
			if err := d.stopSession(ctx, s, "idle for longer than idle_timeout_s"); err != nil {
				d.log.Warn("stop idle session", "session", s.snapshot().ID, "err", err)
			}
		}
	}
}
