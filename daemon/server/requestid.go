package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/http"

	"github.com/sandboxd/sandboxd/api"
)

type requestIDKey struct{}

// withRequestID gives every answer an X-Request-Id, even those the router
// makes itself (redirects): the caller's own when it is sane, so a caller
// can follow its request into the daemon's log, else a new random one.
func withRequestID(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get(api.RequestIDHeader)
		if !api.ValidRequestID(id) {
			id = newRequestID()
		}
		w.Header().Set(api.RequestIDHeader, id)
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), requestIDKey{}, id)))
	})
}

// requestIDOf is the id withRequestID gave the request.
func requestIDOf(ctx context.Context) string {
	id, _ := ctx.Value(requestIDKey{}).(string)
	return id
}

func newRequestID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails: crypto/rand crashes the program instead
	return hex.EncodeToString(b[:])
}
