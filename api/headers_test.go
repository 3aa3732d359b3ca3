package api

import (
	"strings"
	"testing"
)

func TestValidRequestID(t *testing.T) {
	for _, c := range []struct {
		id string
		ok bool
	}{
		{"0123abcd", true},
		{"agent-7/call:42?x=1", true},
		{"~!", true},
		{strings.Repeat("x", MaxRequestIDLen), true},
		{strings.Repeat("x", MaxRequestIDLen+1), false},
		{"", false},
		{"a b", false},
		{"a\nX-Forged: 1", false},
		{"\x00", false},
		{"\x7f", false},
		{"é", false},
	} {
		if got := ValidRequestID(c.id); got != c.ok {
			t.Errorf("ValidRequestID(%q) = %v", c.id, got)
		}
	}
}
