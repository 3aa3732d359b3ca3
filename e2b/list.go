package e2b

import (
	"cmp"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/containerd/errdefs"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/e2b/keys"
)

// maxListLimit bounds one page of a list, as E2B's API does.
const maxListLimit = 100

// listV1 is GET /sandboxes: the key's running sandboxes, all at once.
func (g *Gateway) listV1(w http.ResponseWriter, r *http.Request, k keys.Key) error {
	ss, err := g.sandboxes(r, k)
	if err != nil {
		return err
	}
	out := []listedSandbox{}
	for i := range ss {
		if ss[i].Status == api.StatusRunning {
			out = append(out, g.listed(&ss[i]))
		}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// listV2 is GET /v2/sandboxes: the key's sandboxes by state, template,
// start and metadata, a page at a time (x-next-token says where the next
// starts), newest first unless order=asc.
func (g *Gateway) listV2(w http.ResponseWriter, r *http.Request, k keys.Key) error {
	q := r.URL.Query()
	limit, err := queryInt(r, "limit", maxListLimit)
	if err != nil {
		return err
	}
	limit = min(max(limit, 1), maxListLimit)
	states := map[string]bool{}
	for _, v := range q["state"] {
		for _, st := range strings.Split(v, ",") {
			if st != "running" && st != "paused" {
				return errdefs.ErrInvalidArgument.WithMessage(fmt.Sprintf("state %s: running or paused", api.Quote(st)))
			}
			states[st] = true
		}
	}
	var after time.Time
	if v := q.Get("startedAfter"); v != "" {
		if after, err = time.Parse(time.RFC3339, v); err != nil {
			return errdefs.ErrInvalidArgument.WithMessage("startedAfter must be an RFC 3339 time")
		}
	}
	order := q.Get("order")
	if order != "" && order != "asc" && order != "desc" {
		return errdefs.ErrInvalidArgument.WithMessage("order must be asc or desc")
	}
	ss, err := g.sandboxes(r, k)
	if err != nil {
		return err
	}
	ss = slices.DeleteFunc(ss, func(s api.Session) bool {
		if len(states) > 0 && !states[stateOf(s.Status)] {
			return true
		}
		if t := q.Get("template"); t != "" && s.Labels[labelTemplate] != t {
			return true
		}
		return !after.IsZero() && !s.CreatedAt.After(after)
	})
	// Newest first by default, the id breaking ties: a page's cursor is
	// the last one given.
	slices.SortFunc(ss, func(a, b api.Session) int {
		c := cmp.Or(a.CreatedAt.Compare(b.CreatedAt), strings.Compare(a.ID, b.ID))
		if order != "asc" {
			c = -c
		}
		return c
	})
	if tok := q.Get("nextToken"); tok != "" {
		last, err := base64.RawURLEncoding.DecodeString(tok)
		if err != nil {
			return errdefs.ErrInvalidArgument.WithMessage("nextToken is not one this gateway gave")
		}
		i := slices.IndexFunc(ss, func(s api.Session) bool { return s.ID == string(last) })
		if i < 0 {
			return errdefs.ErrInvalidArgument.WithMessage("nextToken names a sandbox that is gone: list again from the start")
		}
		ss = ss[i+1:]
	}
	if len(ss) > limit {
		ss = ss[:limit]
		w.Header().Set("x-next-token", base64.RawURLEncoding.EncodeToString([]byte(ss[limit-1].ID)))
	}
	out := make([]listedSandbox, 0, len(ss))
	for i := range ss {
		out = append(out, g.listed(&ss[i]))
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// sandboxes are the key's running and paused sessions whose metadata
// matches the request's metadata query ("k=v&k2=v2", URL-encoded once
// more, as the SDKs send it). Ended ones are deleted on the way.
func (g *Gateway) sandboxes(r *http.Request, k keys.Key) ([]api.Session, error) {
	want := g.scope(k)
	if m := r.URL.Query().Get("metadata"); m != "" {
		pairs, err := url.ParseQuery(m)
		if err != nil {
			return nil, errdefs.ErrInvalidArgument.WithMessage("metadata must be key=value pairs joined by &")
		}
		for mk, vs := range pairs {
			// The SDKs encode each key and value, then the whole query.
			key, err1 := url.QueryUnescape(mk)
			val, err2 := url.QueryUnescape(vs[len(vs)-1])
			if err1 != nil || err2 != nil {
				return nil, errdefs.ErrInvalidArgument.WithMessage("metadata is not URL-encoded pairs")
			}
			want[labelMeta+key] = val
		}
	}
	all, err := g.o.Daemon.ListSessions(r.Context(), want)
	if err != nil {
		return nil, err
	}
	out := all[:0]
	for _, s := range all {
		if live(s.Status) {
			out = append(out, s)
		} else {
			g.discard(r.Context(), s.ID)
		}
	}
	return out, nil
}
