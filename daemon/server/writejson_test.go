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
	for _, tc := range testutil.Answers() {
		t.Run(tc.Name, func(t *testing.T) {
			var want bytes.Buffer
			if err := json.NewEncoder(&want).Encode(tc.Value); err != nil {
				t.Fatal(err)
			}
			w := httptest.NewRecorder()
			writeJSON(w, 200, tc.Value)
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
