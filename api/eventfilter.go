package api

import (
	"errors"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/containerd/errdefs"
)

// EventTypeMCP is the type of the events of MCP gateway calls.
const EventTypeMCP = "mcp"

// EventTypes are the values GET /v1/events takes in type=.
func EventTypes() []string { return []string{EventTypeSession, EventTypeMCP} }

// Query is f as the query string of GET /v1/events: what the client sends
// and ParseEventFilter reads back.
func (f EventFilter) Query() url.Values {
	q := url.Values{}
	if !f.Since.IsZero() {
		q.Set("since", f.Since.UTC().Format(time.RFC3339Nano))
	}
	if !f.Until.IsZero() {
		q.Set("until", f.Until.UTC().Format(time.RFC3339Nano))
	}
	for _, s := range f.Sessions {
		q.Add("session", s)
	}
	for _, t := range f.Types {
		q.Add("type", t)
	}
	return q
}

// ParseEventFilter reads the query of GET /v1/events. Every mistake is
// the caller's (invalid argument) and says how to write it instead.
func ParseEventFilter(q url.Values) (EventFilter, error) {
	var f EventFilter
	var err error
	if f.Since, err = eventTime(q, "since"); err != nil {
		return f, err
	}
	if f.Until, err = eventTime(q, "until"); err != nil {
		return f, err
	}
	if !f.Since.IsZero() && !f.Until.IsZero() && f.Until.Before(f.Since) {
		return f, errdefs.ErrInvalidArgument.WithMessage("until is before since: nothing could match")
	}
	for _, s := range q["session"] {
		if s == "" {
			return f, errdefs.ErrInvalidArgument.WithMessage("empty session=: give a session id")
		}
		f.Sessions = append(f.Sessions, s)
	}
	for _, t := range q["type"] {
		if !slices.Contains(EventTypes(), t) {
			return f, Errorf(errdefs.ErrInvalidArgument, "unknown event type %s: use %s", Quote(t), strings.Join(EventTypes(), " or "))
		}
		f.Types = append(f.Types, t)
	}
	return f, nil
}

// eventTime reads the one time of query parameter name, if given.
func eventTime(q url.Values, name string) (time.Time, error) {
	vs := q[name]
	switch len(vs) {
	case 0:
		return time.Time{}, nil
	case 1:
	default:
		return time.Time{}, Errorf(errdefs.ErrInvalidArgument, "%s is given %d times: give it once", name, len(vs))
	}
	t, err := ParseEventTime(vs[0])
	if err != nil {
		return time.Time{}, Errorf(errdefs.ErrInvalidArgument, "bad %s %s: %v", name, Quote(vs[0]), err)
	}
	return t, nil
}

// errEventTime says how to write a time of GET /v1/events.
var errEventTime = errors.New("give an RFC 3339 time such as 2026-11-23T15:04:05Z, or Unix seconds such as 1795446245")

// ParseEventTime reads a time of GET /v1/events: RFC 3339, or Unix
// seconds with an optional fraction (as docker events takes them), so
// that shell scripts can pass $(date +%s).
func ParseEventTime(s string) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t.UTC(), nil
	}
	sec, frac, hasFrac := strings.Cut(s, ".")
	if !digits(sec) || hasFrac && (!digits(frac) || len(frac) > 9) {
		return time.Time{}, errEventTime
	}
	n, err := strconv.ParseInt(sec, 10, 64)
	if err != nil {
		return time.Time{}, errEventTime
	}
	var ns int64
	if hasFrac {
		ns, _ = strconv.ParseInt(frac+strings.Repeat("0", 9-len(frac)), 10, 64)
	}
	return time.Unix(n, ns).UTC(), nil
}

func digits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
