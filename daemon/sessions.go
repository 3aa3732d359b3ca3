package daemon

import (
	"context"
	"sort"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/daemon/identity"
	"github.com/sandboxd/sandboxd/internal/logging"
	"github.com/sandboxd/sandboxd/isolation/volume"
)

// ListSessions lists the caller's sessions (every session for root) that
// carry all the given labels, oldest first.
func (d *Daemon) ListSessions(ctx context.Context, labels map[string]string) ([]api.Session, error) {
	caller := identity.From(ctx)
	d.mu.Lock()
	all := make([]*session, 0, len(d.sessions))
	for _, s := range d.sessions {
		all = append(all, s)
	}
	d.mu.Unlock()
	out := []api.Session{}
	for _, s := range all {
		snap := s.snapshot()
		if !caller.IsRoot() && snap.OwnerUID != caller.UID {
			continue
		}
		match := true
		for k, v := range labels {
			if got, ok := snap.Labels[k]; !ok || got != v {
				match = false
				break
			}
		}
		if match {
			out = append(out, snap)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].CreatedAt.Before(out[j].CreatedAt) })
	return out, nil
}

// GetSession returns one session.
func (d *Daemon) GetSession(ctx context.Context, id string) (*api.Session, error) {
	s, err := d.lookup(ctx, id)
	if err != nil {
		return nil, err
	}
	out := s.snapshot()
	return &out, nil
}

// DeleteSession ends a session for good: processes, cgroup, runtime state,
// workspace and history are all gone when it returns.
func (d *Daemon) DeleteSession(ctx context.Context, id string) error {
	s, err := d.lookup(ctx, id)
	if err != nil {
		return err
	}
	d.mu.Lock()
	if d.sessions[id] != s {
		d.mu.Unlock()
		return nil // deleted meanwhile
	}
	delete(d.sessions, id)
	d.mu.Unlock()
	if err := d.destroySession(s); err != nil {
		return err
	}
	if err := d.store.DeleteSession(id); err != nil {
		return err
	}
	logging.From(ctx).Info("session deleted", "session", id)
	return nil
}

// destroySession removes a session's sandbox and folders.
func (d *Daemon) destroySession(s *session) error {
	s.mu.Lock()
	sb := s.sb
	s.sb = nil
	id := s.rec.ID
	s.mu.Unlock()
	if sb != nil {
		if err := sb.Destroy(); err != nil {
			return err
		}
	}
	if d.denied != nil {
		d.denied.forget(id)
	}
	if err := volume.Remove(d.sessionDir(id)); err != nil {
		return err
	}
	// Only now: nothing owned by the block is left for its next session.
	d.releaseIDs(s)
	return nil
}

// Executions lists a session's recorded executions, newest first.
func (d *Daemon) Executions(ctx context.Context, id string, limit int) ([]api.Execution, error) {
	if _, err := d.lookup(ctx, id); err != nil {
		return nil, err
	}
	d.recorder.flush() // the caller's own latest executions are in the list
	return d.store.Executions(id, limit)
}
