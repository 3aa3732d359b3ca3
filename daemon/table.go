package daemon

import (
	"sync"
	"time"

	"github.com/containerd/errdefs"

	"github.com/sandboxd/sandboxd/api"
	sess "github.com/sandboxd/sandboxd/daemon/session"
)

// table is every persistent session of the daemon, with the creations
// under way counted against the quotas. Its lock is taken before a
// session's, never after.
type table struct {
	mu       sync.Mutex
	sessions map[string]*session
	pending  map[uint32]int // creations and starts under way, by owner
	// names are the names creations under way hold, by owner.
	names  map[nameKey]bool
	closed bool
}

// nameKey is a session name of one owner: names are unique per owner.
type nameKey struct {
	owner uint32
	name  string
}

func newTable() *table {
	return &table{sessions: map[string]*session{}, pending: map[uint32]int{}, names: map[nameKey]bool{}}
}

func (t *table) get(id string) (*session, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	s, ok := t.sessions[id]
	return s, ok
}

// has reports whether s is in the table (persistent, and not deleted).
func (t *table) has(s *session) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.sessions[s.ID()] == s
}

func (t *table) add(s *session) {
	t.mu.Lock()
	t.sessions[s.ID()] = s
	t.mu.Unlock()
}

// remove takes s out; false if it was not there (deleted meanwhile).
func (t *table) remove(s *session) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.sessions[s.ID()] != s {
		return false
	}
	delete(t.sessions, s.ID())
	return true
}

// all is every session, in no order.
func (t *table) all() []*session {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]*session, 0, len(t.sessions))
	for _, s := range t.sessions {
		out = append(out, s)
	}
	return out
}

// close refuses reservations from now on and returns every session.
func (t *table) close() (all []*session, already bool) {
	t.mu.Lock()
	already = t.closed
	t.closed = true
	t.mu.Unlock()
	return t.all(), already
}

// reserve counts a creation or start of owner against the quotas before
// it starts, so that concurrent ones cannot overshoot them.
func (t *table) reserve(owner uint32, maxTotal, maxPerUID int) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return errdefs.ErrUnavailable.WithMessage("sandboxd is shutting down")
	}
	total, mine := 0, t.pending[owner]
	for _, n := range t.pending {
		total += n
	}
	for _, s := range t.sessions {
		// A paused session holds its sandbox and memory: it counts.
		if st, o := s.Status(); st == sess.Running || st == sess.Paused {
			total++
			if o == owner {
				mine++
			}
		}
	}
	if total >= maxTotal {
		return api.Errorf(errdefs.ErrResourceExhausted, "this host runs its maximum of %d sessions: delete or stop one first", maxTotal)
	}
	if mine >= maxPerUID {
		return api.Errorf(errdefs.ErrResourceExhausted, "you run your maximum of %d sessions: delete or stop one first", maxPerUID)
	}
	t.pending[owner]++
	return nil
}

func (t *table) release(owner uint32) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.pending[owner]--; t.pending[owner] <= 0 {
		delete(t.pending, owner)
	}
}

// isClosed reports whether the daemon is shutting down.
func (t *table) isClosed() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.closed
}

// keyed is the session owner k.owner made under Idempotency-Key k.name
// after cutoff, nil if none.
func (t *table) keyed(k nameKey, cutoff time.Time) *session {
	for _, s := range t.all() {
		r := s.Snapshot()
		if r.OwnerUID == k.owner && r.Idempotency != nil && r.Idempotency.Key == k.name && r.CreatedAt.After(cutoff) {
			return s
		}
	}
	return nil
}
