package server

import (
	"net/http"

	"github.com/containerd/errdefs"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/docs"
)

// openapi serves docs/openapi.yaml as JSON, so that a client generator or
// a contract test can ask the daemon it talks to what it serves. A spec
// that does not convert is a bug of the build (a unit test converts it),
// answered as one rather than refusing to start the daemon over a
// document.
func (s *Server) openapi(w http.ResponseWriter, _ *http.Request) error {
	b, err := docs.OpenAPIJSON()
	if err != nil {
		return api.Errorf(errdefs.ErrInternal, "the OpenAPI document does not convert to JSON: %v", err)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(b)
	return nil
}
