package session

import (
	"context"
	"errors"

	"github.com/containerd/errdefs"

	"github.com/sandboxd/sandboxd/api"
)

// Operations (starting, stopping, deleting, …) run one at a time: one
// asked for while another is under way waits for it (as docker start
// waits for a docker stop), and so does an execution. The daemon names
// them; the session only keeps the one under way.

// ErrPaused is ClaimExec's answer for a session paused since the caller
// resumed it: the caller resumes it again.
var ErrPaused = errors.New("the session is paused")

// errBusy is the answer to a caller that gave up waiting for op.
func errBusy(id, op string) error {
	return api.Errorf(errdefs.ErrConflict, "session %s is %s: try again when that is done", id, op)
}

// Begin claims the session for op, waiting (up to ctx) for an operation
// under way to end.
func (s *Session[S]) Begin(ctx context.Context, op string) error {
	for {
		s.mu.Lock()
		if s.deleted {
			s.mu.Unlock()
			return NoSuchSession(s.rec.ID)
		}
		if s.op == "" {
			s.op, s.opDone = op, make(chan struct{})
			s.mu.Unlock()
			return nil
		}
		id, busy, done := s.rec.ID, s.op, s.opDone
		s.mu.Unlock()
		select {
		case <-done:
		case <-ctx.Done():
			return errBusy(id, busy)
		}
	}
}

// TryBegin claims the session for op if nothing else is under way: for
// the daemon's own work, which never waits on a client's.
func (s *Session[S]) TryBegin(op string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.op != "" {
		return false
	}
	s.op, s.opDone = op, make(chan struct{})
	return true
}

// End ends the operation Begin (or TryBegin) claimed.
func (s *Session[S]) End() {
	s.mu.Lock()
	s.op = ""
	close(s.opDone)
	s.opDone = nil
	s.mu.Unlock()
}

// Op is the operation under way, "" if none.
func (s *Session[S]) Op() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.op
}

// WaitIdle waits (up to ctx) until no operation is under way.
func (s *Session[S]) WaitIdle(ctx context.Context) error {
	s.mu.Lock()
	id, busy, done := s.rec.ID, s.op, s.opDone
	s.mu.Unlock()
	if done == nil {
		return nil
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return errBusy(id, busy)
	}
}

// ClaimExec takes the session's sandbox for an execution: it must run.
// An operation under way is waited for (up to ctx). ReleaseExec gives it
// back. reset says the interpreter was restarted since the last
// execution without anyone having been told.
func (s *Session[S]) ClaimExec(ctx context.Context) (sb S, reset bool, err error) {
	for {
		if err := s.WaitIdle(ctx); err != nil {
			return sb, false, err
		}
		s.mu.Lock()
		if s.op == "" {
			break // s.mu held
		}
		s.mu.Unlock()
	}
	defer s.mu.Unlock()
	var none S
	if s.deleted {
		return none, false, NoSuchSession(s.rec.ID)
	}
	if s.sb == none {
		return none, false, api.Errorf(errdefs.ErrConflict, "session %s is %s: start it first", s.rec.ID, s.rec.Status)
	}
	if Status(s.rec.Status) == Paused {
		return none, false, ErrPaused
	}
	s.busy++
	reset = s.resetUntold
	s.resetUntold = false
	return s.sb, reset, nil
}

// ReleaseExec gives back what ClaimExec took.
func (s *Session[S]) ReleaseExec() {
	s.mu.Lock()
	s.busy--
	s.mu.Unlock()
}

// SetResetUntold marks the interpreter restarted by the daemon on its own.
func (s *Session[S]) SetResetUntold() {
	s.mu.Lock()
	s.resetUntold = true
	s.mu.Unlock()
}

// SetDeleted marks the session gone for good.
func (s *Session[S]) SetDeleted() {
	s.mu.Lock()
	s.deleted = true
	s.mu.Unlock()
}
