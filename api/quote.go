package api

import "github.com/sandboxd/sandboxd/internal/quote"

// Quote quotes s for an error message, cut to its first bytes (at a rune
// boundary, "…" after): a message names what it rejects, it does not echo
// it back whole (a 100 KB path once came back whole). The one source is
// internal/quote, which packages below the API use too.
func Quote(s string) string { return quote.Quote(s) }

// Cut is s cut to at most n bytes, at a rune boundary (a rune across the
// cut is left out whole).
func Cut(s string, n int) string { return quote.Cut(s, n) }
