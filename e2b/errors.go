package e2b

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"

	"github.com/containerd/errdefs"

	"github.com/sandboxd/sandboxd/api"
)

// Handlers return errors; writeError is the one place that turns them
// into E2B's error body, {code, message}, with the status the daemon's
// class of the error has (api.FromError), so that the SDKs raise what
// E2B's cloud would make them raise: 401 AuthenticationError, 404
// NotFoundError, 429 RateLimitError, 503 ServiceBusyError.

// errUnauthorized is a request without a known key.
var errUnauthorized = errors.New("invalid API key: create one with `sandboxctl e2b key create`")

// statusError is an error with E2B's status for it, where the daemon's
// class would say another (409 for a sandbox already paused, say).
type statusError struct {
	status int
	msg    string
}

func (e *statusError) Error() string { return e.msg }

func errorf(status int, format string, args ...any) error {
	return &statusError{status: status, msg: fmt.Sprintf(format, args...)}
}

// notFound is E2B's sentence for a sandbox the key cannot see.
func notFound(id string) error {
	return errdefs.ErrNotFound.WithMessage(fmt.Sprintf("sandbox %s not found", api.Quote(id)))
}

func writeError(w http.ResponseWriter, log *slog.Logger, err error) {
	status, msg := http.StatusInternalServerError, err.Error()
	var se *statusError
	switch {
	case errors.Is(err, errUnauthorized):
		status = http.StatusUnauthorized
	case errors.As(err, &se):
		status = se.status
	default:
		var body api.ErrorBody
		status, body = api.FromError(err)
		msg = body.Error.Message
	}
	// A gone sandbox's 502 and a 501 are answers, not failures.
	if status >= 500 && status != http.StatusBadGateway && status != http.StatusNotImplemented {
		log.Warn("e2b request failed", "status", status, "err", err)
	}
	writeJSON(w, status, apiError{Code: status, Message: msg})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
