package netdns

import (
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// sweepEvery is how often idle buckets are let go of.
const sweepEvery = time.Minute

// warnEvery bounds how often a session over its rate is logged: a flood is
// one line a minute, not one a query.
const warnEvery = time.Minute

// limiter is a token bucket per session: a sandbox that floods its DNS
// (one sent 491k queries in 10 s) costs the daemon's CPU and the
// upstreams' goodwill, so each session may ask rate queries a second on
// average, burst at once.
type limiter struct {
	rate  rate.Limit
	burst int
	now   func() time.Time

	mu        sync.Mutex
	buckets   map[string]*bucket
	lastSweep time.Time
}

type bucket struct {
	lim *rate.Limiter
	// warned is when the session was last logged over its rate.
	warned time.Time
}

// newLimiter is nil (no limit) for perSecond 0.
func newLimiter(perSecond float64, burst int, now func() time.Time) *limiter {
	if perSecond <= 0 {
		return nil
	}
	return &limiter{rate: rate.Limit(perSecond), burst: max(burst, 1), now: now, buckets: map[string]*bucket{}, lastSweep: now()}
}

// allow takes a token of session's bucket; warn says the refusal is the
// first of a minute, to be logged.
func (l *limiter) allow(session string) (ok, warn bool) {
	if l == nil {
		return true, false
	}
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.sweep(now)
	b := l.buckets[session]
	if b == nil {
		b = &bucket{lim: rate.NewLimiter(l.rate, l.burst)}
		l.buckets[session] = b
	}
	if b.lim.AllowN(now, 1) {
		return true, false
	}
	if now.Sub(b.warned) >= warnEvery {
		b.warned = now
		return false, true
	}
	return false, false
}

// sweep lets go of the buckets full again: a new one is the same, so the
// map holds only the sessions that asked lately, whatever comes and goes.
func (l *limiter) sweep(now time.Time) {
	if now.Sub(l.lastSweep) < sweepEvery {
		return
	}
	l.lastSweep = now
	for s, b := range l.buckets {
		if b.lim.TokensAt(now) >= float64(l.burst) && now.Sub(b.warned) >= warnEvery {
			delete(l.buckets, s)
		}
	}
}

// size is how many buckets are kept (tests).
func (l *limiter) size() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.buckets)
}
