package server

import (
	"errors"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/internal/logging"
)

// defaultRetryAfter is the Retry-After of a 429 whose error gives no hint
// of its own (api.WithRetryAfter): long enough that a client's retry loop
// does not spin, short enough for a slot that frees up soon.
const defaultRetryAfter = time.Second

// writeError is the one place an error becomes an HTTP answer.
func writeError(w http.ResponseWriter, r *http.Request, err error) {
	status, body := api.FromError(err)
	var mna *methodNotAllowed
	if errors.As(err, &mna) {
		status = http.StatusMethodNotAllowed
		w.Header().Set("Allow", mna.allow())
	}
	// Every 429 says when to come back; a 503 when the daemon knows (a
	// draining node's refusal).
	if _, hint := api.RetryAfter(err); status == http.StatusTooManyRequests || status == http.StatusServiceUnavailable && hint {
		w.Header().Set("Retry-After", retryAfterSeconds(err))
	}
	if status >= 500 {
		logging.From(r.Context()).Error("request failed", "method", r.Method, "path", r.URL.Path, "err", err)
	}
	writeJSON(w, status, body)
}

// retryAfterSeconds is err's retry hint in whole seconds, rounded up and
// at least 1: Retry-After has no fractions, and 0 invites a busy loop.
func retryAfterSeconds(err error) string {
	d, ok := api.RetryAfter(err)
	if !ok {
		d = defaultRetryAfter
	}
	return strconv.FormatFloat(math.Max(1, math.Ceil(d.Seconds())), 'f', 0, 64)
}
