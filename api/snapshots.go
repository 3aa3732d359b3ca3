package api

import "time"

// Snapshot is a session's state kept beyond it: its files and settings
// (template, limits, env, network policy, labels, runtime), and with
// Memory its interpreter's memory too. Sessions are made from it
// (CreateSessionRequest.Snapshot) as many times as wanted.
type Snapshot struct {
	ID        string `json:"id"`
	SessionID string `json:"session_id"`
	Name      string `json:"name,omitempty"`
	OwnerUID  uint32 `json:"owner_uid"`
	Template  string `json:"template"`
	Runtime   string `json:"runtime"`
	// Memory is true when a session made from it continues with the
	// interpreter's variables; false: its first execution says
	// state_reset (files only, as under runc).
	Memory    bool      `json:"memory"`
	SizeMB    int64     `json:"size_mb"`
	CreatedAt time.Time `json:"created_at"`
}

// CreateSnapshotRequest is the body of POST /v1/sessions/{id}/snapshots.
type CreateSnapshotRequest struct {
	// Name is the owner's name for it (docker's rules), unique among
	// theirs; "" none.
	Name string `json:"name,omitempty"`
}

// SnapshotList is the body of GET /v1/snapshots.
type SnapshotList struct {
	Snapshots []Snapshot `json:"snapshots"`
}

// ForkRequest is the body of POST /v1/sessions/{id}/fork.
type ForkRequest struct {
	// Count is how many sessions to make (1 to MaxCount; absent: 1).
	Count int `json:"count,omitempty"`
}

// MaxCount bounds the sessions one create from a snapshot, or one fork,
// makes.
const MaxCount = 100

// SnapshotManifest is snapshot.json, the first entry of an exported
// snapshot (GET /v1/snapshots/{id}/export: a tar of snapshot.json, then
// workspace.tar, the files). An import (POST /v1/snapshots/import) checks
// its settings as a create's, for the importing caller on that node.
type SnapshotManifest struct {
	// Format is SnapshotFormat.
	Format    int       `json:"format"`
	Name      string    `json:"name,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	Memory    bool      `json:"memory"`
	// Session is what a session made from it takes: a create's settings
	// (template, runtime, limits, network, env, labels, …).
	Session CreateSessionRequest `json:"session"`
}

// SnapshotFormat is the version of an exported snapshot's layout.
const SnapshotFormat = 1

// Names of an exported snapshot's entries, in their order.
const (
	SnapshotManifestName  = "snapshot.json"
	SnapshotWorkspaceName = "workspace.tar"
)
