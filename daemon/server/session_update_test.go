package server

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/sandboxd/sandboxd/api"
)

// TestUpdateSessionBody: PATCH /v1/sessions/{id} answers the Session; a
// deadline_s that is not an integer, or a field it does not know, is the
// caller's mistake (400 invalid_argument naming it), as on a create.
func TestUpdateSessionBody(t *testing.T) {
	s := newTestServer(&fakeBackend{}, Options{}, &bytes.Buffer{})
	if w := do(s, "PATCH", "/v1/sessions/s1", `{"deadline_s": 60}`); w.Code != http.StatusOK {
		t.Fatalf("PATCH: %d %s", w.Code, w.Body)
	}
	if w := do(s, "PATCH", "/v1/sessions/nope", `{"deadline_s": 60}`); w.Code != http.StatusNotFound {
		t.Fatalf("PATCH of a missing session: %d %s", w.Code, w.Body)
	}
	for _, c := range []struct{ path, body, want string }{
		{"/v1/sessions/s1", `{"deadline_s": 1.5}`, "deadline_s"},
		{"/v1/sessions/s1", `{"deadline_s": "60"}`, "deadline_s"},
		{"/v1/sessions/s1", `{"deadline_s": 1e30}`, "deadline_s"},
		{"/v1/sessions/s1", `{"deadline": 60}`, `unknown field "deadline"`},
		{"/v1/sessions/s1", ``, "empty"},
		{"/v1/sessions", `{"deadline_s": 2.5}`, "deadline_s"},
	} {
		method := "PATCH"
		if c.path == "/v1/sessions" {
			method = "POST"
		}
		w := do(s, method, c.path, c.body)
		var e api.ErrorBody
		_ = json.Unmarshal(w.Body.Bytes(), &e)
		if w.Code != http.StatusBadRequest || e.Error.Code != api.CodeInvalidArgument || !strings.Contains(e.Error.Message, c.want) {
			t.Errorf("%s %s %s: %d %s; want 400 invalid_argument with %q", method, c.path, c.body, w.Code, w.Body, c.want)
		}
	}
}
