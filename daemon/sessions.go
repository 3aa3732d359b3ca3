package daemon

import (
	"cmp"
	"context"
	"slices"
	"strings"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/internal/logging"
)

// ListSessions lists the caller's sessions (every session for root) that
// carry all the given labels, oldest first (then by id).
func (d *Daemon) ListSessions(ctx context.Context, labels map[string]string) ([]api.Session, error) {
	caller := callerFrom(ctx)
	all := d.sessions.all()
	// Sized once and sorted by index: a session's view is large, and a
	// list of 1000 spent a third of its time growing the slice and
	// swapping views (docs/profiles/list-sessions.cpu.pb.gz).
	snaps := make([]api.Session, 0, len(all))
	for _, s := range all {
		snap := s.snapshot()
		if !caller.mayUse(snap.OwnerUID) || !hasLabels(snap.Labels, labels) {
			continue
		}
		snaps = append(snaps, snap)
	}
	order := make([]int, len(snaps))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int {
		return cmp.Or(snaps[a].CreatedAt.Compare(snaps[b].CreatedAt), strings.Compare(snaps[a].ID, snaps[b].ID))
	})
	out := make([]api.Session, len(snaps))
	for i, j := range order {
		out[i] = snaps[j]
	}
	return out, nil
}

// hasLabels says whether have carries every label of want, with its value.
func hasLabels(have, want map[string]string) bool {
	for k, v := range want {
		if got, ok := have[k]; !ok || got != v {
			return false
		}
	}
	return true
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
