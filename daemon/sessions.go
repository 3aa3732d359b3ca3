package daemon

import (
	"context"
	"sort"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/internal/logging"
)

// ListSessions lists the caller's sessions (every session for root) that
// carry all the given labels, oldest first.
func (d *Daemon) ListSessions(ctx context.Context, labels map[string]string) ([]api.Session, error) {
	caller := callerFrom(ctx)
	out := []api.Session{}
	for _, s := range d.sessions.all() {
		snap := s.snapshot()
		if !caller.mayUse(snap.OwnerUID) {
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
	id = s.ID() // id may be a name or a prefix
	if err := s.Begin(ctx, opDelete); err != nil {
		return err
	}
	defer s.End()
	if !d.sessions.remove(s) {
		return nil // deleted meanwhile
	}
	// Gone from the table and marked, it takes no new work: what waited
	// for this operation finds no session.
	s.SetDeleted()
	if err := d.launch.destroy(s); err != nil {
		return err
	}
	if err := d.State().Snapshots.forgetHibernation(id); err != nil {
		return err
	}
	d.tmpl.Wake() // its disk space is free again
	if err := d.store.DeleteSession(id); err != nil {
		return recordErr(id, err)
	}
	was, owner := s.Status()
	d.events.publish(api.SessionEvent{Action: api.ActionDeleted, SessionID: id}, owner)
	d.metrics.SessionDeleted(was)
	logging.From(ctx).Info("session deleted", "session", id)
	return nil
}
