package metrics

import (
	"sync"

	"github.com/sandboxd/sandboxd/isolation/netdns"
)

// dnsTallies are each session's refused DNS queries, for its own stats
// (GET …/stats, its owner's alone): never a label of /metrics. They live
// while the daemon runs (a restart starts them at 0) and go with the
// session's network (forget).
type dnsTallies struct {
	mu sync.Mutex
	n  map[string]*DNSTally
	// known says a session exists (set by watch, while the DNS may
	// already answer sandboxes a previous daemon left): a query answered
	// after its session's delete adds no tally that nothing would forget.
	known func(id string) bool
}

// DNSTally is one session's refused DNS queries: all of them, and of
// those the ones over its rate.
type DNSTally struct{ Refused, RateLimited uint64 }

func (t *dnsTallies) init() { t.n = map[string]*DNSTally{} }

// DNSRefused counts a refused query (or dropped answer's address) of
// session: in the daemon's metric by why, and in the session's tally.
func (m *Metrics) DNSRefused(session string, why netdns.Refusal) {
	m.dnsRefused.WithLabelValues(string(why)).Inc()
	m.dnsBySession.add(session, why)
}

// DNSTally is session's tally, for its stats (zero if it has none).
func (m *Metrics) DNSTally(session string) DNSTally { return m.dnsBySession.get(session) }

// ForgetDNS drops session's tally, with its network.
func (m *Metrics) ForgetDNS(session string) { m.dnsBySession.forget(session) }

// watch sets known.
func (t *dnsTallies) watch(known func(id string) bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.known = known
}

func (t *dnsTallies) add(session string, why netdns.Refusal) {
	t.mu.Lock()
	known := t.known
	t.mu.Unlock()
	if known != nil && !known(session) {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	c := t.n[session]
	if c == nil {
		c = &DNSTally{}
		t.n[session] = c
	}
	c.Refused++
	if why == netdns.RefusedRate {
		c.RateLimited++
	}
}

// get is session's tally (zero if it has none).
func (t *dnsTallies) get(session string) DNSTally {
	t.mu.Lock()
	defer t.mu.Unlock()
	if c := t.n[session]; c != nil {
		return *c
	}
	return DNSTally{}
}

// forget drops session's tally, with its network.
func (t *dnsTallies) forget(session string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.n, session)
}

// deniedSum adds the sessions' refused-packet counters into one counter
// that never goes down, as Prometheus' rate() needs: a session whose
// counter is gone (deleted, stopped) or restarted (its chain written
// anew) keeps what it had at the last scrape. Packets refused after a
// session's last scrape and before its counter went are not counted.
type deniedSum struct {
	mu   sync.Mutex
	gone uint64            // of counters no longer read
	last map[string]uint64 // each counter at the last scrape
}

// total is the sum, now being each session's counter read.
func (s *deniedSum) total(now map[string]uint64) uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	for id, n := range s.last {
		if cur, ok := now[id]; !ok || cur < n {
			s.gone += n
		}
	}
	s.last = now
	sum := s.gone
	for _, n := range now {
		sum += n
	}
	return sum
}
