package metrics

import (
	"testing"

	"github.com/sandboxd/sandboxd/internal/testutil"
	"github.com/sandboxd/sandboxd/isolation/netdns"
)

// TestDeniedSumNeverFalls: the sum of the sessions' refused-packet
// counters is a counter: it does not fall when a session goes or its
// counter starts again.
func TestDeniedSumNeverFalls(t *testing.T) {
	var s deniedSum
	for i, tc := range []struct {
		now  map[string]uint64
		want uint64
	}{
		{map[string]uint64{}, 0},
		{map[string]uint64{"a": 5, "b": 3}, 8},
		{map[string]uint64{"a": 7, "b": 3}, 10},
		{map[string]uint64{"a": 7}, 10},         // b gone: its 3 stay
		{map[string]uint64{"a": 2}, 12},         // a's chain written anew
		{map[string]uint64{"a": 2, "c": 1}, 13}, // a new session
		{map[string]uint64{}, 13},               // all gone
		{map[string]uint64{"b": 4}, 17},         // b back (started again)
	} {
		if got := s.total(tc.now); got != tc.want {
			t.Errorf("scrape %d: %d, want %d", i, got, tc.want)
		}
	}
}

// TestDNSTallies: each refusal counts in the daemon's series by reason
// and in its session's tally (the ones over the rate apart too); a tally
// goes with its session's network, and a session that no longer exists
// gets none (a query answered after its delete).
func TestDNSTallies(t *testing.T) {
	m := New()
	for _, r := range netdns.Refusals {
		if v := testutil.Value(t, m.Registry(), "sandboxd_dns_refused_total", "reason", string(r)); v != 0 {
			t.Fatalf("%s starts at %v", r, v)
		}
	}
	// Before Watch every session counts (the DNS may answer sandboxes a
	// previous daemon left before the daemon is built).
	m.DNSRefused("a", netdns.RefusedName)
	m.DNSRefused("a", netdns.RefusedRate)
	m.DNSRefused("b", netdns.RefusedRate)
	if got := m.DNSTally("a"); got != (DNSTally{Refused: 2, RateLimited: 1}) {
		t.Errorf("a: %+v", got)
	}
	if got := m.DNSTally("none"); got != (DNSTally{}) {
		t.Errorf("a session without refusals: %+v", got)
	}
	m.ForgetDNS("a")
	if got := m.DNSTally("a"); got != (DNSTally{}) {
		t.Errorf("a forgotten: %+v", got)
	}
	m.Watch(&fakeSource{sessions: map[string]bool{"b": true}})
	m.DNSRefused("gone", netdns.RefusedName)
	if got := m.DNSTally("gone"); got != (DNSTally{}) {
		t.Errorf("a session that does not exist has a tally: %+v", got)
	}
	m.DNSRefused("b", netdns.RefusedName)
	if got := m.DNSTally("b"); got != (DNSTally{Refused: 2, RateLimited: 1}) {
		t.Errorf("b: %+v", got)
	}
	for r, want := range map[netdns.Refusal]float64{netdns.RefusedName: 3, netdns.RefusedRate: 2} {
		if got := testutil.Value(t, m.Registry(), "sandboxd_dns_refused_total", "reason", string(r)); got != want {
			t.Errorf("%s: %v, want %v", r, got, want)
		}
	}
}
