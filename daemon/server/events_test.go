package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/containerd/errdefs"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/client"
)

// TestEventsQuery checks that the query reaches the backend as a filter,
// or is refused before anything streams. until is always in the past, so
// the fake ends the stream at once.
func TestEventsQuery(t *testing.T) {
	at := func(s string) time.Time { t, _ := time.Parse(time.RFC3339Nano, s); return t }
	cases := []struct {
		query  string
		status int
		want   api.EventFilter
		msg    string
	}{
		{"until=2026-11-23T15:04:05Z", 200, api.EventFilter{Until: at("2026-11-23T15:04:05Z")}, ""},
		{"since=2026-11-23T15:00:00Z&until=1795446245", 200,
			api.EventFilter{Since: at("2026-11-23T15:00:00Z"), Until: at("2026-11-23T15:04:05Z")}, ""},
		{"until=1795446245.5&session=a&session=b&type=session&type=mcp", 200,
			api.EventFilter{Until: at("2026-11-23T15:04:05.5Z"), Sessions: []string{"a", "b"}, Types: []string{"session", "mcp"}}, ""},
		{"since=yesterday", 400, api.EventFilter{}, `bad since "yesterday": give an RFC 3339 time`},
		{"until=-5", 400, api.EventFilter{}, `bad until "-5"`},
		{"type=exec", 400, api.EventFilter{}, `unknown event type "exec": use session or mcp`},
		{"since=1&since=2", 400, api.EventFilter{}, "since is given 2 times"},
		{"since=2000&until=1000", 400, api.EventFilter{}, "until is before since"},
		{"session=", 400, api.EventFilter{}, "empty session="},
	}
	for _, c := range cases {
		b := &fakeBackend{}
		w := do(newTestServer(b, Options{}, &bytes.Buffer{}), "GET", "/v1/events?"+c.query, "")
		if w.Code != c.status {
			t.Errorf("%s: %d, want %d: %s", c.query, w.Code, c.status, w.Body)
			continue
		}
		if c.status != 200 {
			if e := errorBody(t, w); e.Code != api.CodeInvalidArgument || !strings.Contains(e.Message, c.msg) {
				t.Errorf("%s: %+v, want %q", c.query, e, c.msg)
			}
			continue
		}
		got := b.lastFilter()
		if !got.Since.Equal(c.want.Since) || !got.Until.Equal(c.want.Until) || !slices.Equal(got.Sessions, c.want.Sessions) || !slices.Equal(got.Types, c.want.Types) {
			t.Errorf("%s: the backend got %+v, want %+v", c.query, got, c.want)
		}
		if ct := w.Header().Get("Content-Type"); ct != api.StreamMIME {
			t.Errorf("%s: Content-Type %q", c.query, ct)
		}
	}
}

// TestEventsHeadersComeFirst: a client sees the stream open before any
// event exists, then gets each event as its own line.
func TestEventsHeadersComeFirst(t *testing.T) {
	gate := make(chan struct{})
	b := &fakeBackend{gate: gate, events: []api.SessionEvent{
		{Type: "session", Action: api.ActionCreated, SessionID: "s1"},
		{Type: "session", Action: api.ActionStopped, SessionID: "s1", Reason: "idle timeout"},
	}}
	_, _, sock := serveBackend(t, b, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", "http://x/v1/events", nil)
	resp, err := unixHTTP(sock).Do(req) // returns with the headers, or hangs the test
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != api.StreamMIME || resp.Header.Get(api.RequestIDHeader) == "" {
		t.Fatalf("%d %v", resp.StatusCode, resp.Header)
	}
	close(gate)
	sc := bufio.NewScanner(resp.Body)
	for _, want := range b.events {
		if !sc.Scan() {
			t.Fatalf("the stream ended early: %v", sc.Err())
		}
		var got api.SessionEvent
		if err := json.Unmarshal(sc.Bytes(), &got); err != nil || got != want {
			t.Fatalf("line %s: %+v %v", sc.Bytes(), got, err)
		}
	}
}

func TestEventsThroughTheClient(t *testing.T) {
	two := []api.SessionEvent{
		{Type: "session", Action: api.ActionCreated, SessionID: "s1"},
		{Type: "session", Action: api.ActionDeleted, SessionID: "s1"},
	}
	errStop := errors.New("enough")
	past := api.EventFilter{Until: time.Now().Add(-time.Second)}
	cases := []struct {
		name    string
		b       *fakeBackend
		f       api.EventFilter
		stopAt  int // fn fails at this event (0: never)
		cancel  bool
		events  int
		wantErr func(error) bool
	}{
		{"until passed", &fakeBackend{events: two}, past, 0, false, 2, func(err error) bool { return err == nil }},
		{"the backend fails", &fakeBackend{events: two[:1], eventsErr: errdefs.ErrConflict.WithMessage("busy")}, api.EventFilter{}, 0, false, 1,
			func(err error) bool {
				return errdefs.IsConflict(err) && err.Error() == "busy" && client.RequestID(err) != ""
			}},
		{"fn fails", &fakeBackend{events: two}, api.EventFilter{}, 1, false, 1, func(err error) bool { return errors.Is(err, errStop) }},
		{"ctx ends", &fakeBackend{events: two}, api.EventFilter{}, 0, true, 2, func(err error) bool { return errors.Is(err, context.Canceled) }},
		{"a bad filter", &fakeBackend{}, api.EventFilter{Types: []string{"exec"}}, 0, false, 0, errdefs.IsInvalidArgument},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, cl, _ := serveBackend(t, c.b, Options{})
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			var got []api.SessionEvent
			err := cl.Events(ctx, c.f, func(ev *api.SessionEvent) error {
				got = append(got, *ev)
				switch {
				case len(got) == c.stopAt:
					return errStop
				case c.cancel && len(got) == len(c.b.events):
					cancel()
				}
				return nil
			})
			if !c.wantErr(err) || len(got) != c.events {
				t.Fatalf("%d events, %v", len(got), err)
			}
		})
	}
}

// TestShutdownEndsEventStreams: an event stream does not hold Shutdown up
// until its grace runs out, and its client learns why it ended.
func TestShutdownEndsEventStreams(t *testing.T) {
	b := &fakeBackend{events: []api.SessionEvent{{Type: "session", Action: api.ActionCreated, SessionID: "s1"}}}
	s, cl, _ := serveBackend(t, b, Options{})
	open := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- cl.Events(context.Background(), api.EventFilter{}, func(*api.SessionEvent) error { close(open); return nil })
	}()
	<-open
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.Shutdown(ctx); err != nil {
		t.Fatalf("shutdown waited for the event stream: %v", err)
	}
	if err := <-done; !errdefs.IsUnavailable(err) || !strings.Contains(err.Error(), "shutting down") {
		t.Fatalf("the client was not told: %v", err)
	}
}
