package server

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/containerd/errdefs"

	"github.com/sandboxd/sandboxd/api"
)

// The fake's attached process is pid 7: it has printed "hi" on stdout and
// ended with 3.
func (f *fakeBackend) WriteStdin(_ context.Context, _ string, pid int, b []byte, eof bool) error {
	if pid != 7 {
		return errdefs.ErrNotFound.WithMessage("no attached process")
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.stdin = append(f.stdin, b...)
	f.stdinEOF = eof
	return nil
}

func (f *fakeBackend) ResizeProcess(_ context.Context, _ string, pid int, size api.TermSize) error {
	if pid != 7 {
		return errdefs.ErrNotFound.WithMessage("no attached process")
	}
	return nil
}

func (f *fakeBackend) ProcessOutput(_ context.Context, _ string, pid int, from int64, follow bool, opened func(), send func(api.ProcessOutput) error) error {
	if pid != 7 {
		return errdefs.ErrNotFound.WithMessage("no attached process")
	}
	opened()
	code := 3
	if from != -2 {
		if err := send(api.ProcessOutput{Stream: api.StreamStdout, DataB64: "aGk=", Offset: 0}); err != nil {
			return err
		}
	}
	return send(api.ProcessOutput{ExitCode: &code, Offset: 2})
}

func TestAttachedProcessCalls(t *testing.T) {
	b := &fakeBackend{}
	s := newTestServer(b, Options{MaxRequestBytes: 32}, &strings.Builder{})
	for _, c := range []struct {
		method, target, body string
		status               int
	}{
		{"POST", "/v1/sessions/s1/processes/7/stdin", "input", 204},
		{"POST", "/v1/sessions/s1/processes/7/stdin?eof=1", "", 204},
		{"POST", "/v1/sessions/s1/processes/7/stdin?eof=maybe", "", 400},
		{"POST", "/v1/sessions/s1/processes/7/stdin", strings.Repeat("x", 33), 413},
		{"POST", "/v1/sessions/s1/processes/8/stdin", "x", 404},
		{"POST", "/v1/sessions/s1/processes/0/stdin", "x", 400},
		{"POST", "/v1/sessions/s1/processes/7/resize", `{"rows":24,"cols":80}`, 204},
		{"POST", "/v1/sessions/s1/processes/7/resize", `{"rows":24}`, 400},
		{"POST", "/v1/sessions/s1/processes/7/resize", `{"rows":-1,"cols":80}`, 400},
		{"POST", "/v1/sessions/s1/processes/7/signal", `{"signal":"TERM"}`, 204},
		{"POST", "/v1/sessions/s1/processes/7/signal", `{}`, 400},
		{"GET", "/v1/sessions/s1/processes/7/output?from=later", "", 400},
		{"GET", "/v1/sessions/s1/processes/7/output?follow=2", "", 400},
		{"GET", "/v1/sessions/s1/processes/8/output", "", 404},
		{"PUT", "/v1/sessions/s1/processes/7/output", "", 405},
	} {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(c.method, c.target, strings.NewReader(c.body))
		s.Handler().ServeHTTP(rec, req.WithContext(context.WithValue(req.Context(), credKey{}, testCaller)))
		if rec.Code != c.status {
			t.Errorf("%s %s %s: %d %s, want %d", c.method, c.target, c.body, rec.Code, rec.Body, c.status)
		}
	}
	if string(b.stdin) != "input" || !b.stdinEOF {
		t.Errorf("stdin got %q (eof %v)", b.stdin, b.stdinEOF)
	}
	for from, want := range map[string]int{"": 2, "now": 1, "0": 2} {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest("GET", "/v1/sessions/s1/processes/7/output?follow=1&from="+from, nil)
		s.Handler().ServeHTTP(rec, req.WithContext(context.WithValue(req.Context(), credKey{}, testCaller)))
		lines := strings.Split(strings.TrimSpace(rec.Body.String()), "\n")
		var last api.ProcessOutput
		if err := json.Unmarshal([]byte(lines[len(lines)-1]), &last); rec.Code != 200 || len(lines) != want || err != nil || last.ExitCode == nil || *last.ExitCode != 3 {
			t.Errorf("output from %q: %d %q", from, rec.Code, rec.Body)
		}
	}
}
