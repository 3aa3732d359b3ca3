package server

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/docs"
)

// loadSpec loads and validates docs/openapi.yaml as the daemon embeds it.
func loadSpec(t *testing.T) *openapi3.T {
	t.Helper()
	doc, err := openapi3.NewLoader().LoadFromData(docs.OpenAPIYAML)
	if err != nil {
		t.Fatalf("docs/openapi.yaml does not load: %v", err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatalf("docs/openapi.yaml is not valid OpenAPI: %v", err)
	}
	return doc
}

// specPath is a router pattern as OpenAPI writes it: ServeMux's {path...}
// (the rest of the path) has no OpenAPI form but a plain parameter.
func specPath(pattern string) string {
	return strings.ReplaceAll(pattern, "...}", "}")
}

// TestOpenAPIMatchesRouter checks that the spec names every route the
// router serves and serves every route the spec names, each with the
// query parameters the route takes: a route added or removed on either
// side alone fails here.
func TestOpenAPIMatchesRouter(t *testing.T) {
	doc := loadSpec(t)
	s := newTestServer(&fakeBackend{}, Options{Metrics: http.NotFoundHandler()}, &bytes.Buffer{})

	served := map[string][]string{} // "METHOD path" → query parameters
	for _, rt := range s.table() {
		served[rt.method+" "+rt.path] = slices.Sorted(slices.Values(rt.query))
	}
	// The port proxy answers every method, as the spec must say.
	for _, p := range portPaths {
		for _, m := range []string{"GET", "PUT", "POST", "DELETE", "OPTIONS", "HEAD", "PATCH", "TRACE"} {
			served[m+" "+specPath(p)] = nil
		}
	}

	specified := map[string][]string{}
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			var query []string
			for _, ps := range [][]*openapi3.ParameterRef{item.Parameters, op.Parameters} {
				for _, p := range ps {
					if p.Value.In == openapi3.ParameterInQuery {
						query = append(query, p.Value.Name)
					}
				}
			}
			sort.Strings(query)
			specified[method+" "+path] = query
		}
	}

	for route, query := range served {
		squery, ok := specified[route]
		switch {
		case !ok:
			t.Errorf("the router serves %s; docs/openapi.yaml does not have it", route)
		case strings.Contains(route, "/ports/"):
			// The proxy passes any query on to the sandbox.
		case !slices.Equal(query, squery):
			t.Errorf("%s takes query parameters %q; docs/openapi.yaml says %q", route, query, squery)
		}
	}
	for route := range specified {
		if _, ok := served[route]; !ok {
			t.Errorf("docs/openapi.yaml has %s; the router does not serve it", route)
		}
	}
}

// TestOpenAPIEnums checks the spec's enums against the constants of
// package api, so that a new status, language or error code is not
// missing from it.
func TestOpenAPIEnums(t *testing.T) {
	doc := loadSpec(t)
	schema := func(name string) *openapi3.Schema {
		s := doc.Components.Schemas[name]
		if s == nil {
			t.Fatalf("no schema %s", name)
		}
		return s.Value
	}
	prop := func(name, p string) *openapi3.Schema { return schema(name).Properties[p].Value }
	execStatuses := []any{api.StatusRunning, api.StatusOK, api.StatusError, api.StatusTimeout, api.StatusKilled, api.StatusInterrupted, api.StatusLost}
	for _, c := range []struct {
		what string
		s    *openapi3.Schema
		want []any
	}{
		{"Session.status", prop("Session", "status"), []any{api.StatusRunning, api.StatusPaused, api.StatusHibernated, api.StatusStopped, api.StatusFailed}},
		{"Stats.status", prop("Stats", "status"), []any{api.StatusRunning, api.StatusStopped, api.StatusFailed}},
		{"Execution.status", prop("Execution", "status"), execStatuses},
		{"ExecutionSummary.status", prop("ExecutionSummary", "status"), execStatuses},
		{"Language", schema("Language"), []any{api.LanguagePython, api.LanguageShell, api.LanguageJavaScript}},
		{"Runtime", schema("Runtime"), []any{api.RuntimeRunc, api.RuntimeRunsc}},
		{"NetworkMode", schema("NetworkMode"), []any{api.NetworkNone, api.NetworkAllowlist, api.NetworkOpen}},
		{"Health.status", prop("Health", "status"), []any{api.HealthOK, api.HealthDegraded, api.HealthUnhealthy}},
		{"Node.state", prop("Node", "state"), []any{api.NodeReady, api.NodeDraining}},
		{"Event.type", prop("Event", "type"), []any{api.EventStdout, api.EventStderr, api.EventDone, api.EventDisplay, api.EventError}},
		{"SessionEvent.action", prop("SessionEvent", "action"), []any{api.ActionCreated, api.ActionStarted, api.ActionStopped,
			api.ActionPaused, api.ActionResumed, api.ActionRestarted, api.ActionDeleted, api.ActionFailed, api.ActionOOM,
			api.ActionTimeout, api.ActionInterrupted, api.ActionRestored, api.ActionLost, api.ActionHibernated, api.ActionWoken}},
		{"ErrorDetail.code", prop("ErrorDetail", "code"), []any{api.CodeInvalidArgument, api.CodeNotFound, api.CodeConflict,
			api.CodeFailedPrecondition, api.CodePermissionDenied, api.CodePayloadTooLarge, api.CodeResourceExhausted, api.CodeInternal, api.CodeUnavailable,
			api.CodeBadGateway}},
	} {
		if !reflect.DeepEqual(c.s.Enum, c.want) {
			t.Errorf("%s: docs/openapi.yaml says %q, package api %q", c.what, c.s.Enum, c.want)
		}
	}
	var types []any
	for _, t := range api.EventTypes() {
		types = append(types, t)
	}
	q := doc.Paths.Value("/v1/events").Get.Parameters.GetByInAndName("query", "type")
	if got := q.Schema.Value.Items.Value.Enum; !reflect.DeepEqual(got, types) {
		t.Errorf("GET /v1/events type: docs/openapi.yaml says %q, package api %q", got, types)
	}
}

// TestOpenAPIServed checks GET /v1/openapi.json answers the embedded
// YAML, converted and nothing else: the same document once loaded.
func TestOpenAPIServed(t *testing.T) {
	want := loadSpec(t)
	s := newTestServer(&fakeBackend{}, Options{}, &bytes.Buffer{})
	w := do(s, "GET", "/v1/openapi.json", "")
	if w.Code != http.StatusOK || w.Header().Get("Content-Type") != "application/json" {
		t.Fatalf("GET /v1/openapi.json: %d %q: %.200s", w.Code, w.Header().Get("Content-Type"), w.Body)
	}
	got, err := openapi3.NewLoader().LoadFromData(w.Body.Bytes())
	if err != nil {
		t.Fatalf("the served JSON does not load: %v", err)
	}
	gb, _ := json.Marshal(got)
	wb, _ := json.Marshal(want)
	if !bytes.Equal(gb, wb) {
		t.Errorf("the served document differs from docs/openapi.yaml")
	}
}
