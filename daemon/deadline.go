package daemon

import (
	"context"
	"fmt"
	"time"

	"github.com/containerd/errdefs"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/daemon/metrics"
	sess "github.com/sandboxd/sandboxd/daemon/session"
	"github.com/sandboxd/sandboxd/internal/logging"
	"github.com/sandboxd/sandboxd/store"
)

// A session's deadline is when it ends whatever its activity: the caller's
// own limit, where max_session_lifetime_s is the operator's. It is kept in
// the session's record, so a restarted daemon keeps to it, and it goes by
// the daemon's clock, as the reaper that keeps to it does.

// maxDeadlineS bounds deadline_s so that now plus it stays a time (ten
// years: longer is no deadline at all).
const maxDeadlineS = 10 * 365 * 24 * 3600

// checkDeadlineS checks a request's deadline_s: more than 0 at a create
// (absent there is none), 0 or more at an update (0 removes it).
func checkDeadlineS(n int, zeroRemoves bool) error {
	switch {
	case n == 0 && !zeroRemoves:
		return errdefs.ErrInvalidArgument.WithMessage("deadline_s must be more than 0 seconds: leave it out for no deadline")
	case n < 0:
		return api.Errorf(errdefs.ErrInvalidArgument, "deadline_s must be 0 or more seconds, not %d", n)
	case n > maxDeadlineS:
		return api.Errorf(errdefs.ErrInvalidArgument, "deadline_s of %d s is over the most allowed, %d s (ten years)", n, maxDeadlineS)
	}
	return nil
}

// deadlineAt is the deadline n seconds after t (zero for 0: none).
func deadlineAt(t time.Time, n int) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return t.Add(time.Duration(n) * time.Second).UTC().Truncate(time.Second)
}

// UpdateSession changes the settings of a session that change while it
// lives: its deadline.
func (d *Daemon) UpdateSession(ctx context.Context, id string, req *api.UpdateSessionRequest) (*api.Session, error) {
	if req.DeadlineS == nil {
		return nil, errdefs.ErrInvalidArgument.WithMessage("nothing to change: send deadline_s (seconds from now; 0 removes the deadline)")
	}
	if err := checkDeadlineS(*req.DeadlineS, true); err != nil {
		return nil, err
	}
	return d.lifecycle(ctx, id, opUpdate, func(s *session) error {
		old := s.Snapshot().Deadline
		at := deadlineAt(d.clock.Now(), *req.DeadlineS)
		s.Update(func(r *store.Record) { r.Deadline = at })
		rec := s.Snapshot()
		if err := d.store.PutSession(&rec); err != nil {
			s.Update(func(r *store.Record) { r.Deadline = old })
			return recordErr(rec.ID, err)
		}
		logging.From(ctx).Info("session deadline changed", "session", rec.ID, "deadline", at)
		return nil
	})
}

// deadlineDue says whether the session runs (or is paused, or
// hibernated) past its
// deadline at t: a stopped or failed one has nothing left to end.
func deadlineDue(s *session, t time.Time) bool {
	rec := s.Snapshot()
	st := sess.Status(rec.Status)
	return (st == sess.Running || st == sess.Paused || st == sess.Hibernated) && !rec.Deadline.IsZero() && !t.Before(rec.Deadline)
}

// deadlineReason is the reason a session stopped at its deadline gives.
func deadlineReason(s *session) string {
	return fmt.Sprintf("%s (deadline_s) of %s", metrics.ReasonDeadlinePrefix, s.Snapshot().Deadline.Format(time.RFC3339))
}

// clearPassedDeadline removes a deadline that has passed at t, so that a
// session started again is not stopped at once; the start's commit
// records it. The caller holds the session's operation.
func clearPassedDeadline(s *session, t time.Time) {
	s.Update(func(r *store.Record) {
		if !r.Deadline.IsZero() && !t.Before(r.Deadline) {
			r.Deadline = time.Time{}
		}
	})
}
