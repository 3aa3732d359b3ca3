package api

import (
	"errors"
	"time"
)

// WithRetryAfter gives err a hint of how long the caller should wait
// before trying again; the daemon sends it as Retry-After on a 429, and
// the client gives it back through RetryAfter. The class and message of
// err are kept.
func WithRetryAfter(err error, d time.Duration) error {
	if err == nil {
		return nil
	}
	return &retryAfter{err: err, d: d}
}

// RetryAfter is the hint of WithRetryAfter anywhere in err's chain.
func RetryAfter(err error) (time.Duration, bool) {
	var ra *retryAfter
	if errors.As(err, &ra) {
		return ra.d, true
	}
	return 0, false
}

type retryAfter struct {
	err error
	d   time.Duration
}

func (e *retryAfter) Error() string { return e.err.Error() }
func (e *retryAfter) Unwrap() error { return e.err }
