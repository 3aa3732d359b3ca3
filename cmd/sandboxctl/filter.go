package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/sandboxd/sandboxd/api"
)

// sessionFilter is what ls --filter keeps: label filters go to the daemon
// (?label=), the others are matched here.
type sessionFilter struct {
	labels map[string]string
	keep   []func(api.Session) bool
}

// filterKeys are the keys ls --filter takes, as docker ps's.
var filterKeys = []string{"id", "name", "label", "status", "runtime", "template", "network"}

// parseSessionFilters reads --filter key=value flags. Filters of one key
// are alternatives (status=running --filter status=paused keeps either);
// different keys must all match. label=k=v needs the label with that
// value, label=k the label with any value.
func parseSessionFilters(flags []string) (*sessionFilter, error) {
	f := &sessionFilter{labels: map[string]string{}}
	alts := map[string][]string{}
	for _, fl := range flags {
		k, v, ok := strings.Cut(fl, "=")
		if !ok || v == "" || !slices.Contains(filterKeys, k) {
			return nil, fmt.Errorf("bad --filter %q: write it as key=value, the key one of %s", fl, strings.Join(filterKeys, ", "))
		}
		if k == "label" {
			lk, lv, hasValue := strings.Cut(v, "=")
			if hasValue {
				f.labels[lk] = lv
			} else {
				f.keep = append(f.keep, func(s api.Session) bool { _, ok := s.Labels[lk]; return ok })
			}
			continue
		}
		alts[k] = append(alts[k], v)
	}
	for k, vs := range alts {
		f.keep = append(f.keep, func(s api.Session) bool {
			for _, v := range vs {
				if matchField(s, k, v) {
					return true
				}
			}
			return false
		})
	}
	return f, nil
}

func matchField(s api.Session, key, v string) bool {
	switch key {
	case "id":
		return strings.HasPrefix(s.ID, v)
	case "name":
		return s.Name == v
	case "status":
		return s.Status == v
	case "runtime":
		return s.Runtime == v
	case "template":
		// Its template's ref, or the name its owner knows it by.
		return s.Template == v || s.Template == api.TemplateRef(s.OwnerUID, v)
	case "network":
		return s.Network == v
	}
	return false
}

// apply keeps the sessions every filter matches.
func (f *sessionFilter) apply(list []api.Session) []api.Session {
	out := list[:0:0]
	for _, s := range list {
		if !slices.ContainsFunc(f.keep, func(k func(api.Session) bool) bool { return !k(s) }) {
			out = append(out, s)
		}
	}
	return out
}

// orDash is s, or "-" for an empty column.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
