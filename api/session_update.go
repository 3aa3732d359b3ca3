package api

// The bodies of the PATCHes of a session: its settings, and its network
// policy, that change while it lives.

// UpdateSessionRequest is the body of PATCH /v1/sessions/{id}: the
// session's settings that change while it lives. A field left out stays
// as it is, so each is a pointer.
type UpdateSessionRequest struct {
	// DeadlineS sets the session's deadline to that many seconds from
	// now, earlier or later than the one it had; 0 removes it. A deadline
	// past max_session_lifetime_s changes nothing: the lifetime ends the
	// session first.
	DeadlineS *int `json:"deadline_s,omitempty"`
}

// NetworkRequest is the body of PATCH /v1/sessions/{id}/network: the
// session's new network policy, in force at once.
type NetworkRequest struct {
	Network string   `json:"network"`
	Allow   []string `json:"allow,omitempty"`
	// EgressKbps and MaxConnections, when given, replace the session's
	// caps (0: none); absent, they stay.
	EgressKbps     *int `json:"egress_kbps,omitempty"`
	MaxConnections *int `json:"max_connections,omitempty"`
}
