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

// executionRecord is an execution as the store keeps it: cut to keep
// bytes (history_record_bytes, see historyCut).
func executionRecord(e *api.Execution, keep int64) *store.Execution {
	e = historyCut(e, keep)
	r := &store.Execution{
		ID: e.ID, SessionID: e.SessionID, Language: e.Language, Status: e.Status,
		Stdout: e.Stdout, Stderr: e.Stderr, ExitCode: e.ExitCode, Result: e.Result,
		StartedAt: e.StartedAt, DurationMS: e.DurationMS, Truncated: e.Truncated, StateReset: e.StateReset,
		Summarized: e.Summarized, Metrics: (*store.ExecMetrics)(e.Metrics), CodeSHA256: e.CodeSHA256, CallerUID: e.CallerUID,
	}
	if e.Error != nil {
		r.Error = &store.ExecError{Name: e.Error.Name, Value: e.Error.Value, Traceback: e.Error.Traceback}
	}
	for _, o := range e.Outputs {
		r.Outputs = append(r.Outputs, store.Output{MIME: o.MIME, Data: o.Data, Bundle: o.Bundle})
	}
	return r
}

// executionView is a recorded execution as the API shows it.
func executionView(r *store.Execution) api.Execution {
	e := api.Execution{
		ID: r.ID, SessionID: r.SessionID, Language: r.Language, Status: r.Status,
		Stdout: r.Stdout, Stderr: r.Stderr, ExitCode: r.ExitCode, Result: r.Result,
		StartedAt: r.StartedAt, DurationMS: r.DurationMS, Truncated: r.Truncated, StateReset: r.StateReset,
		Summarized: r.Summarized, Metrics: (*api.ExecMetrics)(r.Metrics), CodeSHA256: r.CodeSHA256, CallerUID: r.CallerUID,
	}
	if r.Error != nil {
		e.Error = &api.ExecError{Name: r.Error.Name, Value: r.Error.Value, Traceback: r.Error.Traceback}
	}
	for _, o := range r.Outputs {
		e.Outputs = append(e.Outputs, api.Output{MIME: o.MIME, Data: o.Data, Bundle: o.Bundle})
	}
	return e
}
