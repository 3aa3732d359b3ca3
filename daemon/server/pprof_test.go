package server

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/sandboxd/sandboxd/internal/identity"
)

// TestPprof: root reads the daemon's profiles through the socket; anyone
// else is refused.
func TestPprof(t *testing.T) {
	s := newTestServer(&fakeBackend{}, Options{}, io.Discard)
	get := func(caller identity.Caller, target string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(http.MethodGet, target, nil)
		r = r.WithContext(context.WithValue(r.Context(), credKey{}, caller))
		w := httptest.NewRecorder()
		s.Handler().ServeHTTP(w, r)
		return w
	}
	root := identity.Peer(0, 0, 1)
	if w := get(root, "/debug/pprof/"); w.Code != http.StatusOK || !strings.Contains(w.Body.String(), "heap") {
		t.Fatalf("the index as root: %d %.200s", w.Code, w.Body)
	}
	if w := get(root, "/debug/pprof/heap?debug=1"); w.Code != http.StatusOK || !strings.Contains(w.Body.String(), "heap profile") {
		t.Fatalf("the heap profile as root: %d %.200s", w.Code, w.Body)
	}
	if w := get(root, "/debug/pprof/goroutine"); w.Code != http.StatusOK || w.Body.Len() == 0 {
		t.Fatalf("the goroutine profile as root: %d", w.Code)
	}
	w := get(testCaller, "/debug/pprof/heap")
	if w.Code != http.StatusForbidden {
		t.Fatalf("the heap profile as uid 1000: %d", w.Code)
	}
	if e := errorBody(t, w); !strings.Contains(e.Message, "only root") {
		t.Fatalf("refusal: %+v", e)
	}
}
