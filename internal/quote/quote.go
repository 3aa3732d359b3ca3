// Package quote quotes what an error message rejects, cut short: the
// API's messages (api.Quote) and those of packages below the API that
// reach clients unchanged (isolation/unpack) quote alike from one source.
package quote

import (
	"strconv"
	"unicode/utf8"
)

// quoteMax bounds what an error message quotes of the input it rejects.
const quoteMax = 64

// Quote quotes s for an error message, cut to its first bytes (at a rune
// boundary, "…" after): a message names what it rejects, it does not echo
// it back whole (a 100 KB path once came back whole).
func Quote(s string) string {
	if len(s) <= quoteMax {
		return strconv.Quote(s)
	}
	return strconv.Quote(Cut(s, quoteMax)) + "…"
}

// Cut is s cut to at most n bytes, at a rune boundary (a rune across the
// cut is left out whole).
func Cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
