package server

import (
	"bytes"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/internal/testutil"
)

// TestWriteJSONIsEncodingJSON: writeJSON's answers are byte for byte what
// encoding/json wrote before it, but for invalid UTF-8: both put U+FFFD
// in its place, encoding/json escaped (\ufffd), the new encoder as the
// character itself, the same string to any JSON decoder.
func TestWriteJSONIsEncodingJSON(t *testing.T) {
	for _, tc := range []struct {
		name string
		v    any
	}{
		{"a full session", testutil.FullSession()},
		{"a list", api.SessionList{Sessions: testutil.Sessions(3)}},
		{"an empty list", api.SessionList{}},
		{"an error", api.ErrorBody{Error: api.ErrorDetail{Code: "not_found", Message: "no such session: <x>"}}},
		{"an embedded struct", api.FolderMade{FileStat: api.FileStat{Path: "/w"}, Created: true}},
		{"an execution", testutil.FullExecution()},
		{"raw JSON", api.MCPAnswer{OK: true, Result: json.RawMessage(`{"a": [1, 2.50, "<"]}`)}},
		{"a map", map[string]any{"b": -0.0, "a": 1e-7, "<": nil, "z": []any{}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var want bytes.Buffer
			if err := json.NewEncoder(&want).Encode(tc.v); err != nil {
				t.Fatal(err)
			}
			w := httptest.NewRecorder()
			writeJSON(w, 200, tc.v)
			if got := w.Body.String(); got != strings.ReplaceAll(want.String(), `\ufffd`, "\ufffd") {
				t.Errorf("writeJSON:\n%s\nencoding/json:\n%s", got, want.String())
			}
		})
	}
}

// BenchmarkWriteJSON: a list of 1000 sessions (make bench's), written by
// writeJSON beside encoding/json's encoder.
func BenchmarkWriteJSON(b *testing.B) {
	list := api.SessionList{Sessions: testutil.Sessions(1000)}
	b.Run("encoding-json", func(b *testing.B) {
		for b.Loop() {
			w := httptest.NewRecorder()
			_ = json.NewEncoder(w).Encode(list)
		}
	})
	b.Run("writeJSON", func(b *testing.B) {
		for b.Loop() {
			writeJSON(httptest.NewRecorder(), 200, list)
		}
	})
}
