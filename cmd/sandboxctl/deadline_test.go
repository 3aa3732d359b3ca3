package main

import "testing"

// TestParseDeadline: --deadline takes a Go duration or seconds, rounds a
// fraction of a second up, and refuses what is not a duration.
func TestParseDeadline(t *testing.T) {
	for in, want := range map[string]int{"10m": 600, "90": 90, "0": 0, "1h30m": 5400, "1500ms": 2, "0s": 0} {
		if got, err := parseDeadline(in); err != nil || got != want {
			t.Errorf("parseDeadline(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "-5", "-1m", "soon", "10x", "1e9h"} {
		if got, err := parseDeadline(in); err == nil {
			t.Errorf("parseDeadline(%q) = %d, want an error", in, got)
		}
	}
}
