// Package session owns a session's state: its status, the reason for it,
// its sandbox, and the lifecycle operation under way. Its fields are
// unexported, so no other package assigns them; every change is one of
// the methods here, under the session's lock, and a change of status
// goes through the transition table (status.go), which refuses an
// illegal move (as moby's container/state.go, with runc's transition()).
//
// Readers take a copy of the record (Snapshot); the fields that are not
// state (the exec count, the network policy, the id block, …) change
// through Update, which cannot move the status.
package session

import (
	"sync"
	"time"

	"github.com/containerd/errdefs"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/store"
)

// Session is one session in memory. S is the sandbox that runs it: the
// session only holds it (the daemon declares what a sandbox does), and
// its zero value is "none". mu guards everything; it is held only for
// short state changes, never across an execution or a start.
type Session[S comparable] struct {
	mu  sync.Mutex
	rec store.Record
	sb  S // set while running or paused
	// op is the lifecycle operation under way, "" if none; opDone is
	// closed when it ends.
	op     string
	opDone chan struct{}
	// busy counts executions under way, so the idle reaper spares them.
	busy int
	// oomKills is how many out-of-memory kills the sandbox had when last
	// looked at, so each new one is told once.
	oomKills uint64
	// deleted is set once the session is gone: what waited for its
	// operation finds nothing.
	deleted bool
	// resetUntold is set when the daemon restarted the interpreter on its
	// own (an agent it could not speak to after an upgrade): the next
	// execution says state_reset.
	resetUntold bool
}

// New is a session just created (or made for a warm pool, or to try a
// template): running, before its first sandbox starts. The record is
// copied; its status and reason are the session's own.
func New[S comparable](rec store.Record) *Session[S] {
	rec.Status, rec.Reason = string(Running), ""
	return &Session[S]{rec: rec}
}

// Load is a session as the store kept it, status and reason included,
// with no sandbox yet: restoring takes its sandbox back (SetSandbox) or
// fails it.
func Load[S comparable](rec store.Record) *Session[S] {
	return &Session[S]{rec: rec}
}

// now is the time as records keep it.
func now() time.Time { return time.Now().UTC() }

// Snapshot is a copy of the session's record, for readers and the store.
// Its slices and maps are shared: they are replaced, never changed in
// place.
func (s *Session[S]) Snapshot() store.Record {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rec
}

// Update changes the record's other fields under the session's lock. What
// the state owns (status, reason, the pause's clock) is put back as it
// was after f: only this package moves it.
func (s *Session[S]) Update(f func(*store.Record)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	status, reason, pausedAt, pausedS := s.rec.Status, s.rec.Reason, s.rec.PausedAt, s.rec.PausedS
	f(&s.rec)
	s.rec.Status, s.rec.Reason, s.rec.PausedAt, s.rec.PausedS = status, reason, pausedAt, pausedS
}

// ID is the session's id.
func (s *Session[S]) ID() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rec.ID
}

// IDOwner is the session's id and owner.
func (s *Session[S]) IDOwner() (string, uint32) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rec.ID, s.rec.OwnerUID
}

// Status is the session's status and owner.
func (s *Session[S]) Status() (status Status, owner uint32) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return Status(s.rec.Status), s.rec.OwnerUID
}

// Sandbox is the session's sandbox, the zero S unless it runs (or is
// paused).
func (s *Session[S]) Sandbox() S {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sb
}

// Idle is what the idle reaper asks: running says the session runs with
// no operation under way; idle, that it also has no execution under way
// and was unused for longer than its idle timeout (it has one).
func (s *Session[S]) Idle(now time.Time) (running, idle bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var none S
	lim := time.Duration(s.rec.Limits.IdleTimeoutS) * time.Second
	running = s.sb != none && s.op == "" && Status(s.rec.Status) == Running
	idle = running && lim > 0 && now.Sub(s.rec.LastUsedAt) > lim && s.busy == 0
	return running, idle
}

// NoteOOMKills records the sandbox's count of out-of-memory kills and
// returns the count it had before, so that each new kill is told once.
func (s *Session[S]) NoteOOMKills(n uint64) (seen uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	seen = s.oomKills
	s.oomKills = max(seen, n)
	return seen
}

// NoSuchSession is the answer for a session the caller cannot see:
// another user's is "not found", exactly like a missing or deleted one.
func NoSuchSession(id string) error {
	return api.Errorf(errdefs.ErrNotFound, "no such session: %s", api.Quote(id))
}
