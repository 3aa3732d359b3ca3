package client

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestTemplateRefInPath: a template's "uid/name" reaches the daemon's
// /v1/templates/{name} whole, as one segment (it was escaped twice and
// arrived as "1000%2Fdata-science").
func TestTemplateRefInPath(t *testing.T) {
	var got []string
	mux := http.NewServeMux()
	for _, pattern := range []string{"GET /v1/templates/{name}", "DELETE /v1/templates/{name}"} {
		mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
			got = append(got, r.PathValue("name"))
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"name":"x"}`))
		})
	}
	cl := NewWithHTTPClient("/x.sock", &http.Client{Transport: roundTripper(func(r *http.Request) (*http.Response, error) {
		// As the daemon reads it: from the request line.
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, httptest.NewRequest(r.Method, r.URL.RequestURI(), nil))
		return rec.Result(), nil
	})})
	ctx := context.Background()
	if _, err := cl.Template(ctx, "1000/data-science"); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.Template(ctx, "data"); err != nil {
		t.Fatal(err)
	}
	if err := cl.DeleteTemplate(ctx, "0/data"); err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[0] != "1000/data-science" || got[1] != "data" || got[2] != "0/data" {
		t.Fatalf("the daemon read %q", got)
	}
}
