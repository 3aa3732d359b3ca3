package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/template"
)

// formatHelp is the help of every --format flag.
const formatHelp = `print each item with a Go template, as docker does (e.g. '{{.ID}} {{.Status}}'; fields as in --json, by their Go names: .ID, .Status, .Labels, .Limits.MemoryMB); "json" prints each as one line of JSON`

// formatFuncs are the template functions docker's --format has.
var formatFuncs = template.FuncMap{
	"json": func(v any) (string, error) {
		b, err := json.Marshal(v)
		return string(b), err
	},
	"join":  strings.Join,
	"lower": strings.ToLower,
	"upper": strings.ToUpper,
	"title": func(s string) string {
		if s == "" {
			return s
		}
		return strings.ToUpper(s[:1]) + s[1:]
	},
}

// printFormatted prints each item with format: a Go template (one line an
// item), or "json" (one JSON object a line).
func printFormatted[T any](w io.Writer, format string, items []T) error {
	if format == "json" {
		enc := json.NewEncoder(w)
		for _, it := range items {
			if err := enc.Encode(it); err != nil {
				return err
			}
		}
		return nil
	}
	t, err := template.New("format").Funcs(formatFuncs).Option("missingkey=error").Parse(format)
	if err != nil {
		return fmt.Errorf("bad --format: %w", err)
	}
	for _, it := range items {
		var b strings.Builder
		if err := t.Execute(&b, it); err != nil {
			return fmt.Errorf("bad --format: %w", err)
		}
		fmt.Fprintln(w, strings.TrimSuffix(b.String(), "\n"))
	}
	return nil
}
