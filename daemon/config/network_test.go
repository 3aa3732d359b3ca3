package config

import (
	"fmt"
	"strings"
	"testing"
)

// TestDNSRateConfig: the DNS rate limit is on by default, 0 turns it off,
// and a negative rate or a rate with no burst fails the check.
func TestDNSRateConfig(t *testing.T) {
	if n := Default().Network; n.DNSQueriesPerS != 100 || n.DNSBurst != 200 {
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
		n := Default().Network
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

// TestOpenHostNetworksConfig: open_host_networks takes CIDRs (masked), and
// names itself when one is not.
func TestOpenHostNetworksConfig(t *testing.T) {
	for _, tc := range []struct {
		cidrs []string
		want  string // the parsed prefixes, or "" for an error
	}{
		{nil, "[]"},
		{[]string{"203.0.113.7/24", "2001:db8::/32"}, "[203.0.113.0/24 2001:db8::/32]"},
		{[]string{"203.0.113.7"}, ""},
		{[]string{"lan"}, ""},
	} {
		n := Default().Network
		n.OpenHostNetworks = tc.cidrs
		err := n.validate()
		if tc.want == "" {
			if err == nil || !strings.Contains(err.Error(), "network.open_host_networks") {
				t.Errorf("%v: %v, want an error naming the setting", tc.cidrs, err)
			}
			continue
		}
		ps, perr := n.OpenHostPrefixes()
		if err != nil || perr != nil || fmt.Sprint(ps) != tc.want {
			t.Errorf("%v: %v %v %v, want %s", tc.cidrs, ps, err, perr, tc.want)
		}
	}
}
