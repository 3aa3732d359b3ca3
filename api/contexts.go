package api

import "time"

// ContextDefault is the context of a session's first interpreter, where
// an execution that names none runs. It is always there: it restarts but
// is never deleted.
const ContextDefault = "default"

// CodeContext is an interpreter of its own in a session's sandbox (POST
// /v1/sessions/{id}/contexts): Python executions that name it share its
// globals and no one else's. A shell context holds only a working folder.
type CodeContext struct {
	ID       string `json:"id"`
	Language string `json:"language"`
	// Cwd is its folder: where its interpreter starts, and an execution
	// that gives no cwd runs.
	Cwd       string    `json:"cwd"`
	CreatedAt time.Time `json:"created_at"`
}

// CreateContextRequest makes a context: Language "python" (the default)
// or "shell", in Cwd (default /workspace). From names a Python context
// whose interpreter the new one copies (forked: its globals, imports and
// folder, copied on write; Cwd then moves the copy elsewhere).
type CreateContextRequest struct {
	Language string `json:"language,omitempty"`
	Cwd      string `json:"cwd,omitempty"`
	From     string `json:"from,omitempty"`
}

// ContextList is the answer of GET /v1/sessions/{id}/contexts: the
// default context first, then the others by creation.
type ContextList struct {
	Contexts []CodeContext `json:"contexts"`
}
