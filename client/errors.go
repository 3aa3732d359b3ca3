package client

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/sandboxd/sandboxd/api"
)

// answerError is a failure the daemon answered: the error in its class
// (errdefs.IsNotFound and the like see through it), with the request id
// the daemon logged it under.
type answerError struct {
	err       error
	requestID string
}

func (e *answerError) Error() string { return e.err.Error() }
func (e *answerError) Unwrap() error { return e.err }

// RequestID is the id under which the daemon logged the request that
// failed with err, to find it in the daemon's log; "" when err is not an
// answer of the daemon (it could not be reached, say).
func RequestID(err error) string {
	var ae *answerError
	if errors.As(err, &ae) {
		return ae.requestID
	}
	return ""
}

// RetryAfter is how long the daemon asked the caller to wait before trying
// again: it does on every 429 (errdefs.IsResourceExhausted).
func RetryAfter(err error) (time.Duration, bool) { return api.RetryAfter(err) }

type requestIDKey struct{}

// WithRequestID makes the calls under ctx send id as their X-Request-Id,
// so the daemon logs them under the caller's own id (when it is at most
// 128 printable characters without spaces; else the daemon makes one).
// Without it the daemon makes one for every call.
func WithRequestID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, requestIDKey{}, id)
}

// errorOf turns a non-2xx answer into an error of its class.
func errorOf(resp *http.Response, body api.ErrorBody) error {
	err := api.ToError(resp.StatusCode, body)
	if d, ok := parseRetryAfter(resp.Header.Get("Retry-After")); ok {
		err = api.WithRetryAfter(err, d)
	}
	return &answerError{err: err, requestID: resp.Header.Get(api.RequestIDHeader)}
}

// streamError is the error line that ended a stream after its 200.
func streamError(resp *http.Response, detail *api.ErrorDetail) error {
	err := errors.New("sandboxd ended the stream with an error")
	if detail != nil {
		// The stream's status said 200; the line's code says the class.
		err = api.ToError(http.StatusInternalServerError, api.ErrorBody{Error: *detail})
	}
	return &answerError{err: err, requestID: resp.Header.Get(api.RequestIDHeader)}
}

// parseRetryAfter reads Retry-After in both of its forms: seconds, or an
// HTTP date.
func parseRetryAfter(v string) (time.Duration, bool) {
	if v == "" {
		return 0, false
	}
	if n, err := strconv.ParseInt(v, 10, 32); err == nil && n >= 0 {
		return time.Duration(n) * time.Second, true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(0, time.Until(t)), true
	}
	return 0, false
}
