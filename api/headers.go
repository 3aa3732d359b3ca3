package api

// RequestIDHeader carries a request's id on every answer: the caller's own
// when it sent a valid one, else one the daemon made. The daemon's log
// lines of the request carry the same id, so a failed answer can be found
// in the log.
const RequestIDHeader = "X-Request-Id"

// HeaderIdempotencyKey, on POST /v1/sessions, makes the create
// idempotent: a repeat with the same key from the same uid within 24 hours
// answers 200 with the session the first made instead of making another.
const HeaderIdempotencyKey = "Idempotency-Key"

// MaxRequestIDLen bounds a caller's request id: it goes into every log
// line of the request.
const MaxRequestIDLen = 128

// ValidRequestID reports whether a caller's request id may be used as it
// is: 1 to MaxRequestIDLen printable ASCII characters, no spaces, so it
// cannot forge or break a log line.
func ValidRequestID(id string) bool {
	if id == "" || len(id) > MaxRequestIDLen {
		return false
	}
	for i := 0; i < len(id); i++ {
		if id[i] <= ' ' || id[i] > '~' {
			return false
		}
	}
	return true
}

// A port proxy on the caller's side (sandboxctl port) moves a browser's
// Origin and Referer to these: the daemon refuses requests that carry
// Origin or Referer (a browser tricked into talking to the socket would),
// and puts them back for the server in the sandbox.
const (
	ProxiedOriginHeader  = "X-Sandboxd-Origin"
	ProxiedRefererHeader = "X-Sandboxd-Referer"
)
