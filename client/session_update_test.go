package client

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/sandboxd/sandboxd/api"
)

// TestUpdateSession: the PATCH goes to the session's path with
// deadline_s, 0 included (it removes the deadline), and the Session comes
// back with its deadline.
func TestUpdateSession(t *testing.T) {
	var method, path, body string
	rt := roundTripper(func(r *http.Request) (*http.Response, error) {
		b, _ := io.ReadAll(r.Body)
		method, path, body = r.Method, r.URL.Path, string(b)
		h := http.Header{}
		h.Set("Content-Type", "application/json")
		return &http.Response{StatusCode: 200, Header: h,
			Body: io.NopCloser(strings.NewReader(`{"id":"s1","status":"running","deadline":"2026-11-29T02:00:00Z"}`))}, nil
	})
	cl := NewWithHTTPClient("/x.sock", &http.Client{Transport: rt})
	n := 0
	s, err := cl.UpdateSession(context.Background(), "s1", api.UpdateSessionRequest{DeadlineS: &n})
	if err != nil || s.Deadline == nil || s.Deadline.Hour() != 2 {
		t.Fatalf("%+v %v", s, err)
	}
	if method != "PATCH" || path != "/v1/sessions/s1" || strings.TrimSpace(body) != `{"deadline_s":0}` {
		t.Fatalf("%s %s %s", method, path, body)
	}
}
