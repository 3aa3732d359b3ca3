package daemon

import (
	"context"
	"sync"
	"time"

	"github.com/containerd/errdefs"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/internal/logging"
	"github.com/sandboxd/sandboxd/store"
)

// This file owns a session's state: its status, the reason for it, its
// sandbox, and the lifecycle operation under way. Every change of them is
// one of the methods below, under the session's lock; no other code
// assigns them (as moby's container/state.go).
//
//	          start            stop
//	(new) ─────────► running ───────► stopped
//	                  │   ▲  ◄───────    │
//	     sandbox died │   │   start      │ start failed
//	     or failed    ▼   │ start        ▼
//	                 failed ◄──────────────
//
//	running ──pause──► paused ──resume (or an exec, a file call, stats)──► running
//
// A paused session keeps its sandbox, frozen; stop, restart and delete
// act on it as on a running one.
//
// delete ends any of them. Operations (starting, stopping, deleting) run
// one at a time: one asked for while another is under way waits for it
// (as docker start waits for a docker stop), and so does an execution.
// The status changes once the operation's work is done.

// Lifecycle operations, one at a time per session.
const (
	opStart  = "starting"
	opStop   = "stopping"
	opDelete = "deleting"
	// opNetwork changes the network policy; the status stays.
	opNetwork = "changing its network"
	opPause   = "pausing"
	opResume  = "resuming"
)

// session is one session in memory. mu guards everything; it is held only
// for short state changes, never across an execution or a start.
type session struct {
	mu  sync.Mutex
	rec *store.Record
	sb  Sandbox // set while running
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
	// live are the executions under way, by id.
	live map[string]*liveExec
	// detached are the background processes this daemon started, by pid.
	detached map[int]*detachedProc
}

func newSession(rec *store.Record) *session { return &session{rec: rec} }

// begin claims the session for op, waiting (up to ctx) for an operation
// under way to end.
func (s *session) begin(ctx context.Context, op string) error {
	for {
		s.mu.Lock()
		if s.deleted {
			s.mu.Unlock()
			return errNoSession(s.rec.ID)
		}
		if s.op == "" {
			s.op, s.opDone = op, make(chan struct{})
			s.mu.Unlock()
			return nil
		}
		busy, done := s.op, s.opDone
		s.mu.Unlock()
		select {
		case <-done:
		case <-ctx.Done():
			return errBusy(s.rec.ID, busy)
		}
	}
}

// errBusy is the answer to a caller that gave up waiting for op.
func errBusy(id, op string) error {
	return api.Errorf(errdefs.ErrConflict, "session %s is %s: try again when that is done", id, op)
}

// errNoSession is the answer for a session the caller cannot see: another
// user's is "not found", exactly like a missing or deleted one.
func errNoSession(id string) error {
	return api.Errorf(errdefs.ErrNotFound, "no such session: %s", api.Quote(id))
}

// tryBegin claims the session for op if nothing else is under way: for
// the daemon's own work, which never waits on a client's.
func (s *session) tryBegin(op string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.op != "" {
		return false
	}
	s.op, s.opDone = op, make(chan struct{})
	return true
}

// end ends the operation begin claimed.
func (s *session) end() {
	s.mu.Lock()
	s.op = ""
	close(s.opDone)
	s.opDone = nil
	s.mu.Unlock()
}

// waitIdle waits (up to ctx) until no operation is under way.
func (s *session) waitIdle(ctx context.Context) error {
	s.mu.Lock()
	busy, done := s.op, s.opDone
	s.mu.Unlock()
	if done == nil {
		return nil
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return errBusy(s.rec.ID, busy)
	}
}

// setRunning records that sb now runs the session.
func (s *session) setRunning(sb Sandbox) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sb = sb
	s.rec.Status = api.StatusRunning
	s.rec.Reason = ""
}

// setSandbox records that sb is the session's again (restored by a new
// daemon), its status as it was: running or paused.
func (s *session) setSandbox(sb Sandbox) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sb = sb
	if s.rec.Status != api.StatusPaused {
		s.rec.Status = api.StatusRunning
		s.rec.Reason = ""
	}
}

// setStopped records a stop on purpose, once the sandbox (taken with
// takeSandbox) is gone. A failed session stays failed, with its reason.
func (s *session) setStopped(reason string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sb = nil
	if s.rec.Status == api.StatusRunning || s.rec.Status == api.StatusPaused {
		s.unpause()
		s.rec.Status = api.StatusStopped
		s.rec.Reason = reason
	}
}

// pausable is the sandbox to freeze: nil (and no error) if the session is
// paused already. The caller holds the session's operation, so no new
// execution starts; one under way is a conflict (frozen, it would time
// out).
func (s *session) pausable() (Sandbox, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.rec.Status == api.StatusPaused:
		return nil, nil
	case s.sb == nil:
		return nil, api.Errorf(errdefs.ErrConflict, "session %s is %s: start it first", s.rec.ID, s.rec.Status)
	case s.busy > 0:
		return nil, api.Errorf(errdefs.ErrConflict, "session %s is running an execution: interrupt it or wait for it to end, then pause", s.rec.ID)
	}
	return s.sb, nil
}

// setPaused records that the session's sandbox is frozen.
func (s *session) setPaused(reason string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rec.Status = api.StatusPaused
	s.rec.Reason = reason
	s.rec.PausedAt = now()
}

// paused is the frozen sandbox of a paused session, nil if it is not
// paused.
func (s *session) paused() Sandbox {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.rec.Status != api.StatusPaused {
		return nil
	}
	return s.sb
}

// setResumed records that the session's sandbox runs again: the pause
// counts as use (the idle timeout starts afresh) and not as lifetime.
func (s *session) setResumed() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.unpause()
	s.rec.Status = api.StatusRunning
	s.rec.Reason = ""
	s.rec.LastUsedAt = now()
}

// unpause adds the pause under way, if any, to the time spent paused.
// The caller holds s.mu.
func (s *session) unpause() {
	if !s.rec.PausedAt.IsZero() {
		s.rec.PausedS += now().Sub(s.rec.PausedAt).Seconds()
		s.rec.PausedAt = time.Time{}
	}
}

// setFailed records that the session cannot run, and why; it returns the
// sandbox the caller must stop, if one ran.
func (s *session) setFailed(reason string) Sandbox {
	s.mu.Lock()
	defer s.mu.Unlock()
	sb := s.sb
	s.sb = nil
	s.rec.Status = api.StatusFailed
	s.rec.Reason = reason
	return sb
}

// setExited records that sb died on its own. It reports false when sb is
// no longer the session's (stopped or replaced on purpose meanwhile).
func (s *session) setExited(sb Sandbox, reason string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sb != sb || sb == nil {
		return false
	}
	s.sb = nil
	s.rec.Status = api.StatusFailed
	s.rec.Reason = reason
	return true
}

// setDeleted marks the session gone for good.
func (s *session) setDeleted() {
	s.mu.Lock()
	s.deleted = true
	s.mu.Unlock()
}

// takeSandbox lets go of the session's sandbox without changing its
// status: its watcher ignores its end from then on. At shutdown the
// sandbox runs on for the next daemon; a stop stops it, then sets the
// status.
func (s *session) takeSandbox() Sandbox {
	s.mu.Lock()
	defer s.mu.Unlock()
	sb := s.sb
	s.sb = nil
	return sb
}

// claimExec takes the session's sandbox for an execution: it must run.
// An operation under way is waited for (up to ctx). releaseExec gives it
// back. reset says the interpreter was restarted since the last
// execution without anyone having been told.
func (s *session) claimExec(ctx context.Context) (sb Sandbox, reset bool, err error) {
	for {
		if err := s.waitIdle(ctx); err != nil {
			return nil, false, err
		}
		s.mu.Lock()
		if s.op == "" {
			break // s.mu held
		}
		s.mu.Unlock()
	}
	defer s.mu.Unlock()
	if s.deleted {
		return nil, false, errNoSession(s.rec.ID)
	}
	if s.sb == nil {
		return nil, false, api.Errorf(errdefs.ErrConflict, "session %s is %s: start it first", s.rec.ID, s.rec.Status)
	}
	if s.rec.Status == api.StatusPaused {
		return nil, false, errPaused
	}
	s.busy++
	reset = s.resetUntold
	s.resetUntold = false
	return s.sb, reset, nil
}

// setResetUntold marks the interpreter restarted by the daemon on its own.
func (s *session) setResetUntold() {
	s.mu.Lock()
	s.resetUntold = true
	s.mu.Unlock()
}

func (s *session) releaseExec() {
	s.mu.Lock()
	s.busy--
	s.mu.Unlock()
}

// sandbox is the session's sandbox, nil unless it runs.
func (s *session) sandbox() Sandbox {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sb
}

// record is a copy of the session's record, for the store.
func (s *session) record() store.Record {
	s.mu.Lock()
	defer s.mu.Unlock()
	return *s.rec
}

// idOwner is the session's id and owner.
func (s *session) idOwner() (string, uint32) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rec.ID, s.rec.OwnerUID
}

// status is the session's status and owner.
func (s *session) status() (status string, owner uint32) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rec.Status, s.rec.OwnerUID
}

// commit makes a state change durable and known: the record is written
// (for a persistent session: an error is the caller's to answer), the
// event published, the change logged and counted.
func (d *Daemon) commit(ctx context.Context, s *session, action, reason string) error {
	rec := s.record()
	var err error
	if d.sessions.has(s) {
		err = d.store.PutSession(&rec)
	}
	d.publish(s, action, reason)
	switch action {
	case api.ActionStopped, api.ActionFailed, api.ActionLost, api.ActionOOM:
		d.metrics.ended.WithLabelValues(action).Inc()
		d.metrics.countEnd(action, reason)
	}
	log := logging.From(ctx)
	if action == api.ActionFailed || action == api.ActionLost {
		log.Warn("session "+action, "session", rec.ID, "reason", reason)
	} else {
		log.Info("session "+action, "session", rec.ID, "reason", reason)
	}
	if err != nil {
		return recordErr(rec.ID, err)
	}
	return nil
}
