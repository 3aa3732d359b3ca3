package server

import (
	"encoding/json"
	"net/http"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/internal/logging"
)

// writeError is the one place an error becomes an HTTP answer.
func writeError(w http.ResponseWriter, r *http.Request, err error) {
	status, body := api.FromError(err)
	if status >= 500 {
		logging.From(r.Context()).Error("request failed", "method", r.Method, "path", r.URL.Path, "err", err)
	}
	writeJSON(w, status, body)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
