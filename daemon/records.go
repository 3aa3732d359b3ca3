package daemon

import (
	"maps"
	"slices"
	"time"

	"github.com/sandboxd/sandboxd/api"
	sess "github.com/sandboxd/sandboxd/daemon/session"
	"github.com/sandboxd/sandboxd/store"
)

// The one place where the store's records and the API's wire types meet:
// each changes without the other.

// apiStatus is a session's status as the API (and the store) spell it.
func apiStatus(s sess.Status) string { return string(s) }

// sessionView is a session record as the API shows it.
func sessionView(r *store.Record) api.Session {
	return api.Session{
		ID: r.ID, Name: r.Name, OwnerUID: r.OwnerUID, Template: r.Template, Status: r.Status, Reason: r.Reason,
		CreatedAt: r.CreatedAt, LastUsedAt: r.LastUsedAt, ExecCount: r.ExecCount,
		Limits: apiLimits(r.Limits), Network: r.Network, Allow: slices.Clone(r.Allow), Labels: maps.Clone(r.Labels),
		EgressKbps: r.EgressKbps, MaxConnections: r.MaxConnections, Runtime: runtimeOf(r.Runtime),
		MCPServers: slices.Clone(r.MCPServers), IdleAction: r.IdleAction, Deadline: deadlineView(r.Deadline),
		Volumes: volumeMountsView(r.Volumes), Checkpoints: r.Checkpoints,
	}
}

// volumeMountsView is a record's volumes as the API shows them.
func volumeMountsView(ms []store.VolumeMount) []api.VolumeMount {
	var out []api.VolumeMount
	for _, m := range ms {
		out = append(out, api.VolumeMount{Name: m.Name, Path: m.Path, ReadOnly: m.ReadOnly})
	}
	return out
}

// deadlineView is a record's deadline as the API shows it: absent when
// it has none.
func deadlineView(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	t = t.UTC()
	return &t
}

func apiLimits(l store.Limits) api.Limits {
	return api.Limits{MemoryMB: l.MemoryMB, CPUs: l.CPUs, Pids: l.Pids, DiskMB: l.DiskMB, TimeoutS: l.TimeoutS, IdleTimeoutS: l.IdleTimeoutS}
}

func storeLimits(l api.Limits) store.Limits {
	return store.Limits{MemoryMB: l.MemoryMB, CPUs: l.CPUs, Pids: l.Pids, DiskMB: l.DiskMB, TimeoutS: l.TimeoutS, IdleTimeoutS: l.IdleTimeoutS}
}
