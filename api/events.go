package api

import "time"

// Event types of GET /v1/events.
const (
	EventTypeSession = "session"
)

// Actions of session events: every way a session starts, changes or ends.
const (
	ActionCreated     = "created"
	ActionStarted     = "started"
	ActionStopped     = "stopped"
	ActionPaused      = "paused"
	ActionResumed     = "resumed"
	ActionRestarted   = "restarted"
	ActionDeleted     = "deleted"
	ActionFailed      = "failed"
	ActionOOM         = "oom"
	ActionTimeout     = "timeout"
	ActionInterrupted = "interrupted"
	ActionRestored    = "restored"
	ActionLost        = "lost"
	ActionHibernated  = "hibernated"
	ActionWoken       = "woken"
)

// SessionEvent is one line of GET /v1/events: something that happened to
// a session. Reason says why for stopped, failed and lost.
//
// An event of type "mcp" is a call through the MCP gateway: it has no
// action, and says which server and tool, how long the call took and how
// it ended (one of the MCPOutcome values).
type SessionEvent struct {
	Time      time.Time `json:"time"`
	Type      string    `json:"type"`
	Action    string    `json:"action,omitempty"`
	SessionID string    `json:"session_id"`
	Reason    string    `json:"reason,omitempty"`

	Server     string `json:"server,omitempty"`
	Tool       string `json:"tool,omitempty"`
	DurationMS *int64 `json:"duration_ms,omitempty"`
	Outcome    string `json:"outcome,omitempty"`
}

// EventFilter selects events. A zero Since streams only what happens from
// now on; a Since in the past replays the events the daemon still keeps
// first. A zero Until streams until the caller hangs up; a set one ends
// the stream once the time has passed. Sessions and Types, when not empty,
// keep only events of those sessions and of those types.
type EventFilter struct {
	Since    time.Time
	Until    time.Time
	Sessions []string
	Types    []string
}
