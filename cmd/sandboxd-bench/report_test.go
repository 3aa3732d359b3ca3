package main

import "testing"

func TestGoals(t *testing.T) {
	lat := func(p50, p99 float64) *latency { return &latency{P50: p50, P99: p99} }
	burst := latency{P50: 1, P99: 2}
	for _, tc := range []struct {
		name string
		g    goal
		r    row
		want bool
	}{
		{"claim met", goalClaim(1.2, 1, 3), row{Latency: lat(0.9, 2.5), BaselineP50: 0.8, Ratio: 1.1}, true},
		{"claim too slow by ratio", goalClaim(1.2, 1, 3), row{Latency: lat(0.9, 2.5), BaselineP50: 0.5, Ratio: 1.8}, false},
		{"claim over the absolute p99", goalClaim(1.2, 1, 3), row{Latency: lat(0.9, 4), BaselineP50: 0.8, Ratio: 1.1}, false},
		{"claim on a host whose floor is over 1 ms", goalClaim(1.2, 1, 3), row{Latency: lat(2.2, 6), BaselineP50: 2, Ratio: 1.1}, true},
		{"burst met", goalP99Of(4, burst, 10), row{Latency: lat(3, 7.9)}, true},
		{"burst over 4× the baseline's p99", goalP99Of(4, burst, 10), row{Latency: lat(3, 8.1)}, false},
		{"burst over 10 ms", goalP99Of(4, latency{P99: 5}, 10), row{Latency: lat(3, 11)}, false},
		{"warm exec met", goalWarmExec(3, 2.5), row{Latency: lat(0.3, 0.7), Ratio: 2.9}, true},
		{"warm exec with a tail", goalWarmExec(3, 2.5), row{Latency: lat(0.3, 0.8), Ratio: 2.9}, false},
	} {
		if got := tc.g.met(tc.r); got != tc.want {
			t.Errorf("%s: met = %v, want %v (%s)", tc.name, got, tc.want, tc.g.text)
		}
	}
}
