package api

import (
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/containerd/errdefs"
)

func TestParseEventTime(t *testing.T) {
	at := time.Date(2026, 11, 23, 15, 4, 5, 0, time.UTC)
	for _, c := range []struct {
		in   string
		want time.Time
		ok   bool
	}{
		{"2026-11-23T15:04:05Z", at, true},
		{"2026-11-23T16:04:05+01:00", at, true},
		{"2026-11-23T15:04:05.25Z", at.Add(250 * time.Millisecond), true},
		{"1795446245", at, true},
		{"1795446245.25", at.Add(250 * time.Millisecond), true},
		{"1795446245.000000001", at.Add(1), true},
		{"0", time.Unix(0, 0).UTC(), true},
		{"1795446245.0000000001", time.Time{}, false},
		{"1795446245.", time.Time{}, false},
		{".5", time.Time{}, false},
		{"-5", time.Time{}, false},
		{"+5", time.Time{}, false},
		{"1e9", time.Time{}, false},
		{"99999999999999999999", time.Time{}, false},
		{"2026-11-23", time.Time{}, false},
		{"10m", time.Time{}, false},
		{"", time.Time{}, false},
	} {
		got, err := ParseEventTime(c.in)
		if (err == nil) != c.ok || !got.Equal(c.want) || err == nil && got.Location() != time.UTC {
			t.Errorf("%q: %v %v, want %v", c.in, got, err, c.want)
		}
	}
}

func TestEventFilterQuery(t *testing.T) {
	since := time.Date(2026, 11, 23, 15, 0, 0, 500, time.FixedZone("x", 3600))
	until := since.Add(time.Hour)
	for _, f := range []EventFilter{
		{},
		{Since: since.UTC()},
		{Since: since.UTC(), Until: until.UTC(), Sessions: []string{"a", "b"}, Types: []string{"session", "mcp"}},
	} {
		back, err := ParseEventFilter(f.Query())
		if err != nil || !reflect.DeepEqual(back, f) {
			t.Errorf("%+v came back as %+v (%v)", f, back, err)
		}
	}
}

func TestParseEventFilterRefuses(t *testing.T) {
	for _, c := range []struct{ query, msg string }{
		{"since=yesterday", `bad since "yesterday": give an RFC 3339 time such as 2026-11-23T15:04:05Z, or Unix seconds such as 1795446245`},
		{"until=x", `bad until "x"`},
		{"since=1&since=2", "since is given 2 times: give it once"},
		{"since=2000&until=1000", "until is before since"},
		{"session=a&session=", "empty session="},
		{"type=session&type=exec", `unknown event type "exec": use session or mcp`},
		{"type=", `unknown event type "": use session or mcp`},
	} {
		q, _ := url.ParseQuery(c.query)
		_, err := ParseEventFilter(q)
		if !errdefs.IsInvalidArgument(err) || !strings.HasPrefix(err.Error(), c.msg) {
			t.Errorf("%s: %v, want %q", c.query, err, c.msg)
		}
	}
}
