package daemon

import (
	"github.com/sandboxd/sandboxd/daemon/execution"
	"github.com/sandboxd/sandboxd/daemon/process"
	sess "github.com/sandboxd/sandboxd/daemon/session"
	"github.com/sandboxd/sandboxd/store"
)

// A session's state (status, reason, sandbox, the operation under way)
// is package session's: only it assigns them, through its transition
// table. What is the daemon's alone, the executions under way and the
// background processes it started, stays here beside it.

// Lifecycle operations, one at a time per session (sess.Begin).
const (
	opStart  = "starting"
	opStop   = "stopping"
	opDelete = "deleting"
	// opNetwork changes the network policy; the status stays.
	opNetwork   = "changing its network"
	opPause     = "pausing"
	opResume    = "resuming"
	opHibernate = "hibernating"
	opWake      = "waking"
	// opUpdate changes the settings of PATCH /v1/sessions/{id} (the
	// deadline); the status stays.
	opUpdate = "changing its settings"
)

// session is one session in memory: its state, and what the daemon keeps
// of it besides.
type session struct {
	*sess.Session[Sandbox]
	// live are the executions under way.
	live execution.Lives
	// procs are the background processes this daemon started.
	procs process.Book
	// undo is its undo history (undo.go).
	undo undoState
	// memory is a memory snapshot's image its next start restores
	// (fork.go's seed), once.
	memory string
}

// newSession is a session just made (created, pooled or a template's
// trial): running, before its first sandbox starts.
func newSession(rec *store.Record) *session {
	return &session{Session: sess.New[Sandbox](*rec)}
}

// loadSession is a session as the store kept it.
func loadSession(rec *store.Record) *session {
	return &session{Session: sess.Load[Sandbox](*rec)}
}
