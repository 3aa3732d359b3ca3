package api

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
	cut := quoteMax
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return strconv.Quote(s[:cut]) + "…"
}
