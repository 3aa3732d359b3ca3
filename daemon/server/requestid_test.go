package server

import (
	"bytes"
	"regexp"
	"strings"
	"testing"

	"github.com/sandboxd/sandboxd/api"
)

func TestRequestID(t *testing.T) {
	made := regexp.MustCompile(`^[0-9a-f]{32}$`)
	cases := []struct {
		name, sent string
		kept       bool
	}{
		{"none sent", "", false},
		{"a sane one", "agent-7/call:42", true},
		{"128 characters", strings.Repeat("a", 128), true},
		{"129 characters", strings.Repeat("a", 129), false},
		{"a space", "a b", false},
		{"a tab", "a\tb", false},
		{"not ASCII", "café", false},
		{"a control character", "a\x7fb", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var log bytes.Buffer
			s := newTestServer(&fakeBackend{}, Options{}, &log)
			var header []string
			if c.sent != "" {
				header = []string{api.RequestIDHeader, c.sent}
			}
			// A 500 is logged with the request's logger.
			w := do(s, "GET", "/v1/templates/boom", "", header...)
			got := w.Header().Get(api.RequestIDHeader)
			switch {
			case c.kept && got != c.sent:
				t.Fatalf("the caller's id %q came back as %q", c.sent, got)
			case !c.kept && !made.MatchString(got):
				t.Fatalf("sent %q, got %q: want a new random id", c.sent, got)
			}
			if !strings.Contains(log.String(), `"req_id":"`+got+`"`) {
				t.Fatalf("the log does not carry req_id %s:\n%s", got, log.String())
			}
		})
	}
}

func TestRequestIDOnEveryAnswer(t *testing.T) {
	s := newTestServer(&fakeBackend{}, Options{}, &bytes.Buffer{})
	seen := map[string]bool{}
	for _, c := range []struct {
		method, target string
		status         int
	}{
		{"GET", "/v1/info", 200},
		{"GET", "/v9/nothing", 404},
		{"PATCH", "/v1/info", 405},
		{"GET", "/v1/info?x=1", 400},
		{"GET", "/v1/sessions/../info", 307}, // the router's own redirect
	} {
		w := do(s, c.method, c.target, "")
		if w.Code != c.status {
			t.Errorf("%s %s: %d, want %d", c.method, c.target, w.Code, c.status)
		}
		id := w.Header().Get(api.RequestIDHeader)
		if id == "" || seen[id] {
			t.Errorf("%s %s (%d): request id %q missing or reused", c.method, c.target, w.Code, id)
		}
		seen[id] = true
		if w.Header().Get(api.VersionHeader) == "" {
			t.Errorf("%s %s: no version header", c.method, c.target)
		}
	}
}
