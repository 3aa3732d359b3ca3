package netdns

import (
	"context"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/sandboxd/sandboxd/isolation/netpolicy"
)

// fakeClock is the rate limit's time, moved by the test.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// refusals counts what Refused is told, by session and why.
type refusals struct {
	mu sync.Mutex
	n  map[string]map[Refusal]int
}

func (r *refusals) add(session, _ string, why Refusal, _ string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.n[session] == nil {
		r.n[session] = map[Refusal]int{}
	}
	r.n[session][why]++
}

func (r *refusals) count(session string, why Refusal) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.n[session][why]
}

// TestRateLimitPerSession: a session that floods its DNS gets its burst,
// then REFUSED for the rest, answered without asking upstream and counted;
// another session's queries are answered all the while; tokens come back
// with time.
func TestRateLimitPerSession(t *testing.T) {
	const rate, burst = 10, 20
	u := newUpstream(t)
	p, err := netpolicy.Parse(netpolicy.ModeAllowlist, []string{"web.test"})
	if err != nil {
		t.Fatal(err)
	}
	flooder, quiet := netip.MustParseAddr("10.0.0.2"), netip.MustParseAddr("10.0.0.6")
	clock := &fakeClock{t: time.Unix(1_000_000, 0)}
	refused := &refusals{n: map[string]map[Refusal]int{}}
	s, err := New(Config{
		Upstreams: []string{u.addr},
		Lookup: func(src netip.Addr) (string, *netpolicy.Policy, bool) {
			switch src {
			case flooder:
				return "flooder", p, true
			case quiet:
				return "quiet", p, true
			}
			return "", nil, false
		},
		Pin:     (&pinLog{}).pin,
		Refused: refused.add,
		Rate:    rate, Burst: burst, Now: clock.now,
		Timeout: time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	query := func(src netip.Addr, name string) int {
		q := new(dns.Msg)
		q.SetQuestion(dns.Fqdn(name), dns.TypeA)
		return s.answer(context.Background(), src, q).Rcode
	}
	// A flood with the clock stopped: the burst is answered, nothing more.
	answered := 0
	for i := range 5000 {
		name := "unlisted.test" // NXDOMAIN, answered by the daemon itself
		if i%100 == 0 {
			name = "web.test" // forwarded
		}
		if query(flooder, name) != dns.RcodeRefused {
			answered++
		}
	}
	if answered != burst {
		t.Fatalf("a flood of 5000 queries had %d answered, want the burst %d", answered, burst)
	}
	if n := refused.count("flooder", RefusedRate); n != 5000-burst {
		t.Errorf("%d queries counted refused for the rate, want %d", n, 5000-burst)
	}
	u.mu.Lock()
	upstream := len(u.seen)
	u.mu.Unlock()
	if upstream != 1 { // only the first web.test was inside the burst
		t.Errorf("upstream asked %d times, want 1", upstream)
	}
	// The other session is not affected: its whole burst is answered.
	for i := range burst {
		if rc := query(quiet, "web.test"); rc != dns.RcodeSuccess {
			t.Fatalf("the quiet session's query %d: rcode %s", i, dns.RcodeToString[rc])
		}
	}
	if n := refused.count("quiet", RefusedRate); n != 0 {
		t.Errorf("the quiet session had %d queries refused for the rate", n)
	}
	// A second later the flooder has rate tokens back, and no more.
	clock.advance(time.Second)
	answered = 0
	for range 1000 {
		if query(flooder, "unlisted.test") != dns.RcodeRefused {
			answered++
		}
	}
	if answered != rate {
		t.Errorf("a second later %d answered, want %d", answered, rate)
	}
	// Sustained: over 10 s of a flood, about rate a second get through.
	answered = 0
	for range 1000 {
		clock.advance(10 * time.Millisecond)
		for range 50 {
			if query(flooder, "unlisted.test") != dns.RcodeRefused {
				answered++
			}
		}
	}
	if answered < 10*rate-1 || answered > 10*rate+1 {
		t.Errorf("over 10 s of flood %d answered, want %d", answered, 10*rate)
	}
	// Buckets full again are let go of: the map does not keep every
	// session that ever asked.
	clock.advance(10 * time.Minute)
	query(quiet, "unlisted.test")
	if n := s.limit.size(); n != 1 {
		t.Errorf("%d buckets kept after 10 idle minutes, want 1 (the last asker)", n)
	}
}

// TestRateLimitOff: Rate 0 is no limit.
func TestRateLimitOff(t *testing.T) {
	p, _ := netpolicy.Parse(netpolicy.ModeAllowlist, []string{"web.test"})
	s, err := New(Config{Lookup: func(netip.Addr) (string, *netpolicy.Policy, bool) { return "s", p, true }, Pin: (&pinLog{}).pin})
	if err != nil {
		t.Fatal(err)
	}
	q := new(dns.Msg)
	q.SetQuestion("unlisted.test.", dns.TypeA)
	for i := range 10000 {
		if m := s.answer(context.Background(), netip.MustParseAddr("10.0.0.2"), q); m.Rcode != dns.RcodeNameError {
			t.Fatalf("query %d: rcode %s", i, dns.RcodeToString[m.Rcode])
		}
	}
	if _, err := New(Config{Lookup: func(netip.Addr) (string, *netpolicy.Policy, bool) { return "s", p, true }, Pin: (&pinLog{}).pin, Rate: -1}); err == nil {
		t.Error("a negative rate was taken")
	}
}
