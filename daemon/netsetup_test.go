package daemon

import (
	"strings"
	"testing"
)

// TestDNSRateConfig: the DNS rate limit is on by default, 0 turns it off,
// and a negative rate or a rate with no burst fails the check.
func TestDNSRateConfig(t *testing.T) {
	if n := DefaultConfig().Network; n.DNSQueriesPerS != 100 || n.DNSBurst != 200 {
		t.Fatalf("defaults: %v queries/s, burst %d", n.DNSQueriesPerS, n.DNSBurst)
	}
	for _, tc := range []struct {
		rate  float64
		burst int
		ok    bool
	}{
		{100, 200, true},
		{0, 0, true},
		{0.5, 1, true},
		{-1, 200, false},
		{100, -1, false},
		{100, 0, false},
	} {
		n := DefaultConfig().Network
		n.DNSQueriesPerS, n.DNSBurst = tc.rate, tc.burst
		err := n.validate()
		if (err == nil) != tc.ok {
			t.Errorf("rate %v burst %d: %v, want ok %v", tc.rate, tc.burst, err, tc.ok)
		}
		if err != nil && !strings.Contains(err.Error(), "network.dns_queries_per_s") {
			t.Errorf("rate %v burst %d: %q does not name the setting", tc.rate, tc.burst, err)
		}
	}
}
