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
	s := New(BackendsOf(&fakeBackend{}), Options{MaxRequestBytes: 4096, MaxUploadBytes: 1}, slog.New(slog.NewTextHandler(io.Discard, nil)))
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

// TestDecodeRefuses: what encoding/json would take silently is refused,
// and the message quotes at most a short prefix of what it rejects.
func TestDecodeRefuses(t *testing.T) {
	s := New(BackendsOf(&fakeBackend{}), Options{MaxRequestBytes: 1 << 20, MaxUploadBytes: 1}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	long := strings.Repeat("k", 100<<10)
	for _, c := range []struct {
		name, body, want string
		v                any // default: a create request
	}{
		{"null", `null`, "must be a JSON object", nil},
		{"null with spaces", " \n null ", "must be a JSON object", nil},
		{"string", `"x"`, "JSON", nil},
		{"array", `[]`, "JSON", nil},
		{"duplicate key", `{"memory_mb":64,"memory_mb":128}`, `the key "memory_mb" is given twice in the request body`, nil},
		{"duplicate key in another case", `{"cpus":1,"CPUS":2}`, `"CPUS" is given twice`, nil},
		{"duplicate env key", `{"env":{"A":"1","A":"2"}}`, `the key "A" is given twice in "env"`, nil},
		{"duplicate field of a file", `{"files":[{"path":"a","path":"b","content_base64":""}]}`, `"path" is given twice in "files[]"`, &api.RunRequest{}},
		{"long duplicate label", `{"labels":{"` + long + `":"a","` + long + `":"b"}}`, `"labels"`, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := httptest.NewRequest("POST", "/v1/sessions", strings.NewReader(c.body))
			if c.v == nil {
				c.v = &api.CreateSessionRequest{}
			}
			err := s.decode(httptest.NewRecorder(), r, c.v)
			if !errdefs.IsInvalidArgument(err) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("decode(%.60q) = %v; want invalid argument with %q", c.body, err, c.want)
			}
			if len(err.Error()) > 300 {
				t.Errorf("the message is %d bytes: it echoes the input", len(err.Error()))
			}
		})
	}
	// Keys that differ only in case are two keys in a map.
	r := httptest.NewRequest("POST", "/v1/sessions", strings.NewReader(`{"env":{"a":"1","A":"2"},"labels":{"x":"1"}}`))
	if err := s.decode(httptest.NewRecorder(), r, &api.CreateSessionRequest{}); err != nil {
		t.Fatalf("env with a and A: %v", err)
	}
}
