package client

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/containerd/errdefs"

	"github.com/sandboxd/sandboxd/api"
)

func TestEvents(t *testing.T) {
	created := `{"time":"2026-11-23T15:04:05Z","type":"session","action":"created","session_id":"s1"}` + "\n"
	stopped := `{"time":"2026-11-23T15:04:06Z","type":"session","action":"stopped","session_id":"s1","reason":"idle timeout"}` + "\n"
	past := api.EventFilter{Until: time.Now().Add(-time.Minute)}
	cases := []struct {
		name    string
		status  int
		body    string
		f       api.EventFilter
		events  int
		wantErr func(error) bool
	}{
		{"until passed", 200, created + stopped, past, 2, func(err error) bool { return err == nil }},
		{"ended early", 200, created, api.EventFilter{}, 1,
			func(err error) bool { return errdefs.IsUnavailable(err) && RequestID(err) == "r1" }},
		{"an error line", 200, created + `{"type":"error","error":{"code":"unavailable","message":"sandboxd is shutting down"}}` + "\n", past, 1,
			func(err error) bool {
				return errdefs.IsUnavailable(err) && err.Error() == "sandboxd is shutting down" && RequestID(err) == "r1"
			}},
		{"an error line without an error", 200, `{"type":"error"}` + "\n", past, 0, func(err error) bool { return err != nil }},
		{"a bad line", 200, "{nope\n", past, 0, func(err error) bool { return err != nil && !errdefs.IsUnavailable(err) }},
		{"refused", 400, `{"error":{"code":"invalid_argument","message":"unknown event type \"x\": use session or mcp"}}`, past, 0, errdefs.IsInvalidArgument},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cl := NewWithHTTPClient("/x.sock", &http.Client{Transport: answerWith(nil, c.status, c.body, "Content-Type", api.StreamMIME, api.RequestIDHeader, "r1")})
			n := 0
			err := cl.Events(context.Background(), c.f, func(ev *api.SessionEvent) error {
				if ev.SessionID != "s1" || ev.Time.IsZero() {
					t.Fatalf("event %+v", ev)
				}
				n++
				return nil
			})
			if !c.wantErr(err) || n != c.events {
				t.Fatalf("%d events, %v", n, err)
			}
		})
	}
}

func TestEventsQueryAndStop(t *testing.T) {
	var got *http.Request
	body := `{"type":"session","action":"created","session_id":"s1"}` + "\n" + `{"type":"session","action":"deleted","session_id":"s1"}` + "\n"
	cl := NewWithHTTPClient("/x.sock", &http.Client{Transport: answerWith(&got, 200, body)})
	f := api.EventFilter{
		Since:    time.Date(2026, 11, 23, 15, 0, 0, 0, time.UTC),
		Sessions: []string{"s1", "s2"},
		Types:    []string{"session"},
	}
	stop := errors.New("enough")
	n := 0
	err := cl.Events(context.Background(), f, func(*api.SessionEvent) error { n++; return stop })
	if !errors.Is(err, stop) || n != 1 {
		t.Fatalf("fn's error ends the stream: %d %v", n, err)
	}
	if got.URL.Path != "/v1/events" || got.Header.Get("Accept") != api.StreamMIME ||
		got.URL.RawQuery != "session=s1&session=s2&since=2026-11-23T15%3A00%3A00Z&type=session" {
		t.Fatalf("asked %s %s (Accept %q)", got.URL.Path, got.URL.RawQuery, got.Header.Get("Accept"))
	}
}
