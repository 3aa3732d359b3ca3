package daemon

import (
	"maps"
	"slices"

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
		MCPServers: slices.Clone(r.MCPServers), IdleAction: r.IdleAction,
	}
}

func apiLimits(l store.Limits) api.Limits {
	return api.Limits{MemoryMB: l.MemoryMB, CPUs: l.CPUs, Pids: l.Pids, DiskMB: l.DiskMB, TimeoutS: l.TimeoutS, IdleTimeoutS: l.IdleTimeoutS}
}

func storeLimits(l api.Limits) store.Limits {
	return store.Limits{MemoryMB: l.MemoryMB, CPUs: l.CPUs, Pids: l.Pids, DiskMB: l.DiskMB, TimeoutS: l.TimeoutS, IdleTimeoutS: l.IdleTimeoutS}
}

// templateRecord is a template definition as the store keeps it.
func templateRecord(t *api.Template) *store.Template {
	return &store.Template{
		Name: t.Name, Description: t.Description, Rootfs: t.Rootfs, Env: t.Env, Preload: t.Preload,
		Limits: (*store.LimitDefaults)(t.Limits), PoolSize: t.PoolSize, Packages: t.Packages, IndexURL: t.IndexURL,
		Runtime: t.Runtime, OwnerUID: t.OwnerUID, CreatedAt: t.CreatedAt,
	}
}

// templateDef is a stored template's definition.
func templateDef(r *store.Template) api.Template {
	return api.Template{
		Name: r.Name, Description: r.Description, Rootfs: r.Rootfs, Env: r.Env, Preload: r.Preload,
		Limits: (*api.LimitDefaults)(r.Limits), PoolSize: r.PoolSize, Packages: r.Packages, IndexURL: r.IndexURL,
		Runtime: r.Runtime, OwnerUID: r.OwnerUID, CreatedAt: r.CreatedAt,
	}
}
