package server

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"testing"

	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers/gorillamux"

	"github.com/sandboxd/sandboxd/api"
)

// healthBackend answers GET /v1/health with the Health it is given.
type healthBackend struct {
	fakeBackend
	h api.Health
}

func (b *healthBackend) Health(context.Context) (*api.Health, error) {
	h := b.h
	return &h, nil
}

// TestOpenAPIHealthStatuses is the drift test of GET /v1/health's status
// codes: each status the daemon can report answers the code the API says
// (ok and degraded 200, unhealthy 503: issue 30 found a data dir below
// its floor answered 503 while docs/API.md said degraded with 200), with
// a body the spec's schema for that code takes, and every code the spec
// documents for it, but the generic 400 and 500 of every route, is one the
// handler answers.
func TestOpenAPIHealthStatuses(t *testing.T) {
	doc := loadSpec(t)
	router, err := gorillamux.NewRouter(doc)
	if err != nil {
		t.Fatal(err)
	}
	pass := api.HealthCheck{OK: true}
	ok := map[string]api.HealthCheck{api.CheckDatabase: pass, api.CheckCgroups: pass, api.CheckPools: pass, api.CheckDataDir: pass}
	with := func(name, detail string) map[string]api.HealthCheck {
		m := map[string]api.HealthCheck{}
		for k, v := range ok {
			m[k] = v
		}
		m[name] = api.HealthCheck{Detail: detail}
		return m
	}
	cases := []struct {
		h    api.Health
		want int
	}{
		{api.Health{Status: api.HealthOK, Checks: ok, DataDir: &api.DataDirHealth{FreeMB: 5000, MinFreeMB: 1024, OK: true}}, http.StatusOK},
		{api.Health{Status: api.HealthDegraded, Reasons: []string{"data_dir: 100 MiB free, below the floor of 1024 MiB"},
			Checks: with(api.CheckDataDir, "100 MiB free"), DataDir: &api.DataDirHealth{FreeMB: 100, MinFreeMB: 1024}}, http.StatusOK},
		{api.Health{Status: api.HealthUnhealthy, Reasons: []string{"database: read-only"},
			Checks: with(api.CheckDatabase, "read-only"), DataDir: &api.DataDirHealth{FreeMB: 5000, MinFreeMB: 1024, OK: true}}, http.StatusServiceUnavailable},
	}
	answered := map[string]bool{}
	for _, c := range cases {
		s := newTestServer(&healthBackend{h: c.h}, Options{}, &bytes.Buffer{})
		w := do(s, "GET", "/v1/health", "")
		what := fmt.Sprintf("GET /v1/health, status %s → %d", c.h.Status, w.Code)
		if w.Code != c.want {
			t.Errorf("%s, want %d: %s", what, c.want, w.Body)
		}
		answered[strconv.Itoa(w.Code)] = true

		req := httptest.NewRequest("GET", "http://localhost/v1/health", nil)
		route, params, err := router.FindRoute(req)
		if err != nil {
			t.Fatal(err)
		}
		opts := &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true}
		in := &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route, Options: opts}
		out := &openapi3filter.ResponseValidationInput{RequestValidationInput: in, Status: w.Code, Header: w.Header(), Options: opts}
		out.SetBodyBytes(w.Body.Bytes())
		if err := openapi3filter.ValidateResponse(context.Background(), out); err != nil {
			t.Errorf("%s: the answer breaks docs/openapi.yaml: %v", what, err)
		}
	}
	documented := doc.Paths.Value("/v1/health").Get.Responses.Map()
	for code := range documented {
		if code == "400" || code == "500" {
			continue // every route's: a malformed request, a bug
		}
		if !answered[code] {
			t.Errorf("docs/openapi.yaml documents %s for GET /v1/health; no health status answers it", code)
		}
	}
	for code := range answered {
		if documented[code] == nil {
			t.Errorf("GET /v1/health answers %s; docs/openapi.yaml does not document it", code)
		}
	}
	if !slices.Contains(doc.Components.Schemas["Health"].Value.Properties["status"].Value.Enum, any(api.HealthDegraded)) {
		t.Error("docs/openapi.yaml's Health.status does not have degraded")
	}
}
