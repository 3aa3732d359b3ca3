package session

import (
	"time"

	"github.com/containerd/errdefs"

	"github.com/sandboxd/sandboxd/api"
)

// The changes of a session's state. The status changes once the
// operation's work is done: a stopping session shows running until its
// sandbox is gone.

// transition moves the status to to, with reason, if the table allows it.
// The caller holds s.mu.
func (s *Session[S]) transition(to Status, reason string) error {
	from := Status(s.rec.Status)
	if !allowed(from, to) {
		return &TransitionError{ID: s.rec.ID, From: from, To: to}
	}
	s.rec.Status, s.rec.Reason = string(to), reason
	return nil
}

// SetRunning records that sb now runs the session (started, or started
// again).
func (s *Session[S]) SetRunning(sb S) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.transition(Running, ""); err != nil {
		return err
	}
	s.sb = sb
	return nil
}

// SetSandbox records that sb is the session's again (restored by a new
// daemon), its status as it was: running or paused.
func (s *Session[S]) SetSandbox(sb S) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if Status(s.rec.Status) != Paused {
		if err := s.transition(Running, ""); err != nil {
			return err
		}
	}
	s.sb = sb
	return nil
}

// SetStopped records a stop on purpose, once the sandbox (taken with
// TakeSandbox) is gone, or a hibernated session's memory dropped. A
// failed session stays failed, with its reason; a stopped one keeps its.
func (s *Session[S]) SetStopped(reason string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var none S
	s.sb = none
	if st := Status(s.rec.Status); st == Running || st == Paused || st == Hibernated {
		s.unpause()
		_ = s.transition(Stopped, reason) // allowed from all three
	}
}

// SetHibernated records that the session's memory is saved and its
// sandbox (taken with TakeSandbox) is gone.
func (s *Session[S]) SetHibernated(reason string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.transition(Hibernated, reason); err != nil {
		return err
	}
	var none S
	s.sb = none
	return nil
}

// Pausable is the sandbox to freeze: the zero S (and no error) if the
// session is paused already. The caller holds the session's operation,
// so no new execution starts; one under way is a conflict (frozen, it
// would time out).
func (s *Session[S]) Pausable() (S, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var none S
	switch {
	case Status(s.rec.Status) == Paused:
		return none, nil
	case s.sb == none:
		return none, api.Errorf(errdefs.ErrConflict, "session %s is %s: start it first", s.rec.ID, s.rec.Status)
	case s.busy > 0:
		return none, api.Errorf(errdefs.ErrConflict, "session %s is running an execution: interrupt it or wait for it to end, then pause", s.rec.ID)
	}
	return s.sb, nil
}

// SetPaused records that the session's sandbox is frozen.
func (s *Session[S]) SetPaused(reason string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.transition(Paused, reason); err != nil {
		return err
	}
	s.rec.PausedAt = now()
	return nil
}

// Paused is the frozen sandbox of a paused session, the zero S if it is
// not paused.
func (s *Session[S]) Paused() S {
	s.mu.Lock()
	defer s.mu.Unlock()
	if Status(s.rec.Status) != Paused {
		var none S
		return none
	}
	return s.sb
}

// SetResumed records that the session's sandbox runs again: the pause
// counts as use (the idle timeout starts afresh) and not as lifetime.
func (s *Session[S]) SetResumed() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if Status(s.rec.Status) != Paused {
		return &TransitionError{ID: s.rec.ID, From: Status(s.rec.Status), To: Running}
	}
	s.unpause()
	_ = s.transition(Running, "") // allowed from paused
	s.rec.LastUsedAt = now()
	return nil
}

// unpause adds the pause under way, if any, to the time spent paused.
// The caller holds s.mu.
func (s *Session[S]) unpause() {
	if !s.rec.PausedAt.IsZero() {
		s.rec.PausedS += now().Sub(s.rec.PausedAt).Seconds()
		s.rec.PausedAt = time.Time{}
	}
}

// SetFailed records that the session cannot run, and why; it returns the
// sandbox the caller must stop, if one ran. Every status may fail.
func (s *Session[S]) SetFailed(reason string) S {
	s.mu.Lock()
	defer s.mu.Unlock()
	sb := s.sb
	var none S
	s.sb = none
	_ = s.transition(Failed, reason) // allowed from every status
	return sb
}

// SetExited records that sb died on its own. It reports false when sb is
// no longer the session's (stopped or replaced on purpose meanwhile).
func (s *Session[S]) SetExited(sb S, reason string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	var none S
	if s.sb != sb || sb == none {
		return false
	}
	s.sb = none
	_ = s.transition(Failed, reason) // it had a sandbox: running or paused
	return true
}

// Lost says whether sb, which an execution found dead, is still the
// session's to bring back: it is its sandbox, or the watcher, seeing it
// die first, failed the session, and nothing else took it since.
func (s *Session[S]) Lost(sb S) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	var none S
	return s.sb == sb || (s.sb == none && Status(s.rec.Status) == Failed && s.op == "")
}

// TakeSandbox lets go of the session's sandbox without changing its
// status: its watcher ignores its end from then on. At shutdown the
// sandbox runs on for the next daemon; a stop stops it, then sets the
// status.
func (s *Session[S]) TakeSandbox() S {
	s.mu.Lock()
	defer s.mu.Unlock()
	sb := s.sb
	var none S
	s.sb = none
	return sb
}
