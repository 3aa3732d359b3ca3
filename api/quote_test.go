package api

import (
	"strings"
	"testing"
)

func TestQuote(t *testing.T) {
	long := strings.Repeat("a", 100<<10)
	for _, c := range []struct{ in, want string }{
		{"", `""`},
		{"abc", `"abc"`},
		{"a\x00b", `"a\x00b"`},
		{long, `"` + strings.Repeat("a", 64) + `"…`},
		// A rune across the cut is left out whole.
		{strings.Repeat("a", 63) + "é" + long, `"` + strings.Repeat("a", 63) + `"…`},
	} {
		if got := Quote(c.in); got != c.want {
			t.Errorf("Quote(%.80q) = %s, want %s", c.in, got, c.want)
		}
	}
}
