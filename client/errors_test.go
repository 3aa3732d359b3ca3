package client

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/containerd/errdefs"

	"github.com/sandboxd/sandboxd/api"
)

// answerWith answers status and body with the given headers, and keeps
// the request it got in *got.
func answerWith(got **http.Request, status int, body string, header ...string) roundTripper {
	return func(r *http.Request) (*http.Response, error) {
		if got != nil {
			*got = r
		}
		h := http.Header{}
		for i := 0; i+1 < len(header); i += 2 {
			h.Set(header[i], header[i+1])
		}
		return &http.Response{StatusCode: status, Header: h, Body: io.NopCloser(strings.NewReader(body))}, nil
	}
}

func TestRequestIDOfAFailure(t *testing.T) {
	body := `{"error":{"code":"not_found","message":"no such session: x"}}`
	cases := []struct {
		name   string
		header []string
		want   string
	}{
		{"the daemon's id", []string{api.RequestIDHeader, "abc123"}, "abc123"},
		{"an answer without one", nil, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cl := NewWithHTTPClient("/x.sock", &http.Client{Transport: answerWith(nil, 404, body, c.header...)})
			_, err := cl.GetSession(context.Background(), "x")
			if !errdefs.IsNotFound(err) || err.Error() != "no such session: x" || RequestID(err) != c.want {
				t.Fatalf("%v: request id %q", err, RequestID(err))
			}
		})
	}
	if RequestID(New("/nonexistent.sock").Health(context.Background())) != "" {
		t.Fatal("a daemon that was not reached gave no request id")
	}
}

func TestRequestIDIsSentOnlyWhenAsked(t *testing.T) {
	var got *http.Request
	cl := NewWithHTTPClient("/x.sock", &http.Client{Transport: answerWith(&got, 200, `{}`)})
	if err := cl.Health(context.Background()); err != nil || got.Header.Get(api.RequestIDHeader) != "" {
		t.Fatalf("sent %q by default (%v)", got.Header.Get(api.RequestIDHeader), err)
	}
	if err := cl.Health(WithRequestID(context.Background(), "agent-1")); err != nil || got.Header.Get(api.RequestIDHeader) != "agent-1" {
		t.Fatalf("sent %q, want agent-1 (%v)", got.Header.Get(api.RequestIDHeader), err)
	}
}

func TestRetryAfter(t *testing.T) {
	full := `{"error":{"code":"resource_exhausted","message":"too many sessions"}}`
	cases := []struct {
		name   string
		status int
		header string
		want   time.Duration
		ok     bool
	}{
		{"seconds", 429, "3", 3 * time.Second, true},
		{"none given", 429, "", 0, false},
		{"garbage", 429, "soon", 0, false},
		{"negative", 429, "-1", 0, false},
		{"a date gone by", 429, "Mon, 02 Jan 2006 15:04:05 GMT", 0, true},
		{"on a 503", 503, "10", 10 * time.Second, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var h []string
			if c.header != "" {
				h = []string{"Retry-After", c.header}
			}
			cl := NewWithHTTPClient("/x.sock", &http.Client{Transport: answerWith(nil, c.status, full, h...)})
			_, err := cl.CreateSession(context.Background(), &api.CreateSessionRequest{})
			d, ok := RetryAfter(err)
			if d != c.want || ok != c.ok || err.Error() != "too many sessions" || !errdefs.IsResourceExhausted(err) {
				t.Fatalf("%v: %v %v, want %v %v", err, d, ok, c.want, c.ok)
			}
		})
	}
	if d, ok := parseRetryAfter(time.Now().Add(time.Hour).UTC().Format(http.TimeFormat)); !ok || d < 59*time.Minute {
		t.Fatalf("an HTTP date an hour ahead: %v %v", d, ok)
	}
}
