package server

import (
	"io"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/containerd/errdefs"

	"github.com/sandboxd/sandboxd/api"
)

// FuzzDecode feeds arbitrary bodies to the request decoder: every one is
// either a request or an error of the caller's classes, never a panic.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{`{}`, `{"memory_mb":64,"labels":{"a":"b"}}`, `{"language":"python","code":"1"}`,
		`{"files":[{"path":"a","content_base64":"eA=="}]}`, `{"cpus":1e400}`, `[]`, `{"env":{"A":1}}`, `{} x`, ``, "\x00"} {
		f.Add(s)
	}
	s := New(&fakeBackend{}, Options{MaxRequestBytes: 4096, MaxUploadBytes: 1}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	f.Fuzz(func(t *testing.T, body string) {
		for _, c := range []struct {
			v        any
			required []string
		}{{&api.CreateSessionRequest{}, nil}, {&api.ExecRequest{}, []string{"code"}}, {&api.RunRequest{}, []string{"code"}}} {
			r := httptest.NewRequest("POST", "/v1/sessions", strings.NewReader(body))
			err := s.decode(httptest.NewRecorder(), r, c.v, c.required...)
			if err != nil && !errdefs.IsInvalidArgument(err) && !api.IsPayloadTooLarge(err) {
				t.Fatalf("decode(%q): %v is not the caller's error", body, err)
			}
		}
	})
}
