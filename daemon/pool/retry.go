package pool

import (
	"fmt"
	"sync"
	"time"

	"github.com/containerd/errdefs"
)

// A pool whose refills fail waits RetryMin before the next, doubling at
// each failure up to RetryMax (Options.RetryMin and RetryMax, when set,
// instead: a test's are shorter). Without it a pool that found no disk
// space tried again at once, woken by its own refill's end: 71,426 log
// lines and 11 s of CPU in 10 s (issue 30).
const (
	RetryMin = 100 * time.Millisecond
	RetryMax = 30 * time.Second
)

// refillRetry is the state of a pool's refills: working, or failing
// since when, how often and why, and how long the pool waits before its
// next try. The pool's loop changes it; GET /v1/health reads it.
type refillRetry struct {
	mu sync.Mutex
	// min and max bound the wait (Options.RetryMin, RetryMax).
	min, max time.Duration
	// failing since the first failure of a run; failures counts them.
	failing  bool
	since    time.Time
	failures int
	// err is the last failure; noSpace says it was for want of disk
	// space (the data dir's budget, not a fault of the host).
	err     error
	noSpace bool
	// wait is the wait after the last failure; next is when it ends.
	wait time.Duration
	next time.Time
}

func newRefillRetry(lo, hi time.Duration) *refillRetry {
	return &refillRetry{min: lo, max: max(lo, hi)}
}

// failed notes a refill that failed at now with err. It returns how long
// the pool waits before its next try, and whether the pool began failing
// with it (what the log says, once).
func (r *refillRetry) failed(now time.Time, err error) (wait time.Duration, began bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	began = !r.failing
	if began {
		r.failing, r.since, r.failures, r.wait = true, now, 0, 0
	}
	r.failures++
	r.err, r.noSpace = err, errdefs.IsResourceExhausted(err)
	r.wait = min(max(r.min, 2*r.wait), r.max)
	r.next = now.Add(r.wait)
	return r.wait, began
}

// succeeded notes a refill that worked. It reports whether the pool was
// failing (its recovery is said once), and how many failures and since
// when that run had.
func (r *refillRetry) succeeded() (recovered bool, failures int, since time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.failing {
		return false, 0, time.Time{}
	}
	recovered, failures, since = true, r.failures, r.since
	r.failing, r.err, r.noSpace, r.wait, r.failures = false, nil, false, 0, 0
	return recovered, failures, since
}

// problem is why the pool's refills fail, nil when they work; noSpace
// says it is for want of disk space.
func (r *refillRetry) problem(now time.Time) (err error, noSpace bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.failing {
		return nil, false
	}
	next := r.next.Sub(now).Round(time.Millisecond)
	return fmt.Errorf("failing since %s (%d tries; next in %s): %w",
		r.since.UTC().Format(time.RFC3339), r.failures, max(next, 0), r.err), r.noSpace
}
