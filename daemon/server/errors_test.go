package server

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/containerd/errdefs"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/client"
)

func TestRetryAfter(t *testing.T) {
	full := errdefs.ErrResourceExhausted.WithMessage("too many sessions")
	cases := []struct {
		name string
		err  error
		want string // "" for no header
	}{
		{"a 429 without a hint", full, "1"},
		{"a hint in whole seconds", api.WithRetryAfter(full, 30*time.Second), "30"},
		{"a hint rounded up", api.WithRetryAfter(full, 2500*time.Millisecond), "3"},
		{"no hint under a second", api.WithRetryAfter(full, 0), "1"},
		{"a hint under a wrap", fmt.Errorf("creating: %w", api.WithRetryAfter(full, 5*time.Second)), "5"},
		{"not a 429", errdefs.ErrNotFound.WithMessage("gone"), ""},
		{"a hint on something else", api.WithRetryAfter(errdefs.ErrConflict.WithMessage("busy"), 5*time.Second), ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := httptest.NewRecorder()
			writeError(w, httptest.NewRequest("GET", "/", nil), c.err)
			if got := w.Header().Get("Retry-After"); got != c.want {
				t.Fatalf("Retry-After %q, want %q", got, c.want)
			}
			if e := errorBody(t, w); e.Message != c.err.Error() {
				t.Fatalf("the hint changed the message: %q", e.Message)
			}
		})
	}
}

func TestRetryAfterThroughTheClient(t *testing.T) {
	_, c, _ := serve(t)
	_, err := c.GetSession(context.Background(), "full")
	if d, ok := client.RetryAfter(err); !errdefs.IsResourceExhausted(err) || !ok || d != 7*time.Second {
		t.Fatalf("%v: retry after %v %v", err, d, ok)
	}
	if client.RequestID(err) == "" {
		t.Fatal("a failed answer has no request id on the client side")
	}
	_, err = c.GetSession(context.Background(), "nope")
	if _, ok := client.RetryAfter(err); ok {
		t.Fatalf("a 404 has no retry hint: %v", err)
	}
}

func TestCodeIsRequired(t *testing.T) {
	s := newTestServer(&fakeBackend{}, Options{}, &bytes.Buffer{})
	for _, path := range []string{"/v1/sessions/s1/exec", "/v1/run"} {
		for _, c := range []struct {
			body   string
			status int
			msg    string
		}{
			{`{"language":"python"}`, 400, "code is required"},
			{`{"language":"python","code":null}`, 400, "code is required"},
			{`{}`, 400, "code is required"},
			{`null`, 400, "must be a JSON object"},
			{``, 400, "the request body is empty"},
			{`{"language":"python","code":"1+1"}`, 200, ""},
			{`{"language":"python","code":""}`, 200, ""},
			{`{"language":"python","Code":"1"}`, 200, ""}, // encoding/json matches names so
			{`{"language":"python","code":"1","bogus":1}`, 400, `unknown field "bogus"`},
			{`{"language":"python"} {}`, 400, "more than one value"},
		} {
			w := do(s, "POST", path, c.body)
			if w.Code != c.status {
				t.Errorf("%s %s: %d, want %d: %s", path, c.body, w.Code, c.status, w.Body)
				continue
			}
			if c.msg != "" {
				if e := errorBody(t, w); e.Code != api.CodeInvalidArgument || !strings.Contains(e.Message, c.msg) {
					t.Errorf("%s %s: %+v, want %q", path, c.body, e, c.msg)
				}
			}
		}
	}
}

func TestPanicIsALogged500(t *testing.T) {
	var log bytes.Buffer
	panics := 0
	s := newTestServer(&fakeBackend{}, Options{OnPanic: func() { panics++ }}, &log)
	for _, c := range []struct{ name, sent string }{{"the daemon's id", ""}, {"the caller's id", "call-1"}} {
		t.Run(c.name, func(t *testing.T) {
			log.Reset()
			before := panics
			var header []string
			if c.sent != "" {
				header = []string{api.RequestIDHeader, c.sent}
			}
			w := do(s, "POST", "/v1/sessions/s1/exec", `{"code":"panic"}`, header...)
			id := w.Header().Get(api.RequestIDHeader)
			if c.sent != "" && id != c.sent {
				t.Fatalf("request id %q, want %q", id, c.sent)
			}
			want := `{"error":{"code":"internal","message":"internal error: the daemon logged the details under request id ` + id + `"}}` + "\n"
			if w.Code != http.StatusInternalServerError || w.Body.String() != want {
				t.Fatalf("%d %s, want 500 %s", w.Code, w.Body, want)
			}
			if panics != before+1 {
				t.Fatalf("OnPanic called %d times", panics-before)
			}
			for _, s := range []string{`"level":"ERROR"`, `"msg":"panic in handler"`, `"panic":"boom"`, `"req_id":"` + id + `"`, `goroutine `, `fakeBackend`} {
				if !strings.Contains(log.String(), s) {
					t.Fatalf("the log lacks %s:\n%s", s, log.String())
				}
			}
			if w := do(s, "GET", "/v1/info", ""); w.Code != http.StatusOK {
				t.Fatalf("the server does not serve after a panic: %d", w.Code)
			}
		})
	}
	// Without OnPanic a panic is still a 500.
	s = newTestServer(&fakeBackend{}, Options{}, &log)
	if w := do(s, "POST", "/v1/run", `{"code":"panic"}`); w.Code != http.StatusInternalServerError || strings.Contains(w.Body.String(), "boom") {
		t.Fatalf("%d %s", w.Code, w.Body)
	}
}

// A panic with http.ErrAbortHandler is net/http's way to cut an answer:
// it is not a bug, and not counted.
func TestAbortHandlerIsNotAPanic(t *testing.T) {
	panics := 0
	s := newTestServer(&fakeBackend{}, Options{OnPanic: func() { panics++ }}, &bytes.Buffer{})
	h := s.wrap(func(http.ResponseWriter, *http.Request) error { panic(http.ErrAbortHandler) })
	r := httptest.NewRequest("GET", "/", nil)
	r = r.WithContext(context.WithValue(r.Context(), credKey{}, testCaller))
	defer func() {
		if p := recover(); !errors.Is(p.(error), http.ErrAbortHandler) || panics != 0 {
			t.Fatalf("recovered %v, OnPanic %d", p, panics)
		}
	}()
	h.ServeHTTP(httptest.NewRecorder(), r)
}
