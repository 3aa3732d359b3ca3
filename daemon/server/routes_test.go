package server

import (
	"bytes"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/sandboxd/sandboxd/api"
)

// concrete is a route's path with its wildcards filled in.
func concrete(path string) string {
	return strings.NewReplacer("{id}", "s1", "{name}", "python").Replace(path)
}

var everyMethod = []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE"}

// TestMethodNotAllowed asks every path of the route table with every
// method it does not serve.
func TestMethodNotAllowed(t *testing.T) {
	s := newTestServer(&fakeBackend{}, Options{Metrics: http.NotFoundHandler()}, &bytes.Buffer{})
	allowed := map[string][]string{}
	for _, rt := range s.table() {
		allowed[rt.path] = append(allowed[rt.path], rt.method)
	}
	// Spelled out for a few, so that the table is checked, not only
	// read back.
	for path, want := range map[string]string{
		"/v1/info":                "GET",
		"/v1/node":                "GET",
		"/v1/sessions":            "GET, POST",
		"/v1/sessions/{id}":       "GET, DELETE, PATCH",
		"/v1/sessions/{id}/files": "GET, PUT, DELETE",
		"/v1/events":              "GET",
		"/metrics":                "GET",
	} {
		if got := strings.Join(allowed[path], ", "); got != want {
			t.Errorf("%s serves %s, want %s", path, got, want)
		}
	}
	for path, methods := range allowed {
		for _, m := range everyMethod {
			if strings.Contains(strings.Join(methods, " "), m) {
				continue
			}
			p := concrete(path)
			w := do(s, m, p, "")
			if w.Code != http.StatusMethodNotAllowed || w.Header().Get("Allow") != strings.Join(methods, ", ") {
				t.Errorf("%s %s: %d Allow %q, want 405 Allow %q", m, p, w.Code, w.Header().Get("Allow"), strings.Join(methods, ", "))
				continue
			}
			e := errorBody(t, w)
			want := m + " is not allowed on " + p + ": use " + sentenceList(methods, "or")
			if e.Code != api.CodeInvalidArgument || e.Message != want {
				t.Errorf("%s %s: %+v, want invalid_argument %q", m, p, e, want)
			}
		}
	}
}

func TestUnknownPathsStay404(t *testing.T) {
	s := newTestServer(&fakeBackend{}, Options{}, &bytes.Buffer{})
	for _, c := range []struct{ method, path string }{
		{"GET", "/v9/nothing"},
		{"DELETE", "/v1/nothing"},
		{"POST", "/v1/sessions/s1/nothing"},
		{"GET", "/metrics"}, // not served without Options.Metrics
	} {
		w := do(s, c.method, c.path, "")
		if e := errorBody(t, w); w.Code != http.StatusNotFound || e.Code != api.CodeNotFound || w.Header().Get("Allow") != "" {
			t.Errorf("%s %s: %d %+v", c.method, c.path, w.Code, e)
		}
	}
}

func TestSentenceList(t *testing.T) {
	for _, c := range []struct {
		items []string
		want  string
	}{
		{nil, ""},
		{[]string{"GET"}, "GET"},
		{[]string{"GET", "DELETE"}, "GET or DELETE"},
		{[]string{"GET", "PUT", "DELETE"}, "GET, PUT or DELETE"},
	} {
		if got := sentenceList(c.items, "or"); got != c.want {
			t.Errorf("%q: %q, want %q", c.items, got, c.want)
		}
	}
}

// TestUnknownQueryParameters sends every route of the table a parameter
// it does not take: each refuses it before its handler runs.
func TestUnknownQueryParameters(t *testing.T) {
	s := newTestServer(&fakeBackend{}, Options{Metrics: http.NotFoundHandler()}, &bytes.Buffer{})
	for _, rt := range s.table() {
		p := concrete(rt.path)
		q := url.Values{"lable": {"a=b"}}
		for _, name := range rt.query {
			q.Set(name, "x")
		}
		w := do(s, rt.method, p+"?"+q.Encode(), "")
		takes := "no query parameters"
		if len(rt.query) > 0 {
			takes = sentenceList(rt.query, "and")
		}
		want := `unknown query parameter "lable": this endpoint takes ` + takes
		if e := errorBody(t, w); w.Code != http.StatusBadRequest || e.Code != api.CodeInvalidArgument || e.Message != want {
			t.Errorf("%s %s: %d %+v, want 400 %q", rt.method, p, w.Code, e, want)
		}
	}
	for _, c := range []struct {
		method, target string
		status         int
		msg            string
	}{
		{"GET", "/v1/sessions?foo=1", 400, `unknown query parameter "foo": this endpoint takes label`},
		{"GET", "/v1/info?verbose", 400, `unknown query parameter "verbose": this endpoint takes no query parameters`},
		{"GET", "/v1/events?since=0&follow=1", 400, `unknown query parameter "follow": this endpoint takes since, until, session and type`},
		{"GET", "/v1/sessions/s1/executions?limit=1&offset=2", 400, `unknown query parameter "offset": this endpoint takes limit`},
		{"GET", "/v1/sessions?label=%zz", 400, `bad query string: invalid URL escape "%zz"`},
		{"GET", "/v1/sessions?label=a=b&label=c=d", 200, ""},
		{"GET", "/v1/sessions/s1/executions?limit=2", 200, ""},
		{"GET", "/v1/sessions/s1/files?path=a", 200, ""},
		{"DELETE", "/v1/sessions/s1/files?path=a", 204, ""},
		{"GET", "/v1/info", 200, ""},
		{"GET", "/v1/node?drain=1", 400, `unknown query parameter "drain": this endpoint takes no query parameters`},
		{"GET", "/v1/node", 200, ""},
	} {
		w := do(s, c.method, c.target, "")
		if w.Code != c.status {
			t.Errorf("%s %s: %d, want %d: %s", c.method, c.target, w.Code, c.status, w.Body)
			continue
		}
		if c.msg != "" {
			if e := errorBody(t, w); e.Code != api.CodeInvalidArgument || e.Message != c.msg {
				t.Errorf("%s %s: %+v, want %q", c.method, c.target, e, c.msg)
			}
		}
	}
}
