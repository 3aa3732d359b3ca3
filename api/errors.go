package api

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/containerd/errdefs"
)

// ErrorBody is the body of every non-2xx answer.
type ErrorBody struct {
	Error ErrorDetail `json:"error"`
}

// ErrorDetail is the code and the sentence a person reads.
type ErrorDetail struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Error codes of the contract.
const (
	CodeInvalidArgument = "invalid_argument"
	CodeNotFound        = "not_found"
	CodeConflict        = "conflict"
	// CodeFailedPrecondition is a 409 of the state the resource is in,
	// not of the request (the contract's hibernate of a runc session; an
	// undo of a session that keeps no checkpoints).
	CodeFailedPrecondition = "failed_precondition"
	// CodePermissionDenied extends the contract: the caller may see the
	// resource but not change it (a template another user added).
	CodePermissionDenied  = "permission_denied"
	CodePayloadTooLarge   = "payload_too_large"
	CodeResourceExhausted = "resource_exhausted"
	CodeInternal          = "internal"
	CodeUnavailable       = "unavailable"
	// CodeBadGateway extends the contract: the port proxy found nothing
	// listening on the port inside the sandbox.
	CodeBadGateway = "bad_gateway"
)

// Classes errdefs does not have, defined here in its style.
var (
	// ErrPayloadTooLarge is a body over the configured size limit.
	ErrPayloadTooLarge = class("payload too large")
	// ErrBadGateway is a port proxy with nothing to talk to.
	ErrBadGateway = class("bad gateway")
)

type class string

func (c class) Error() string { return string(c) }

// WithMessage gives the class a sentence of its own.
func (c class) WithMessage(msg string) error { return classed{c, msg} }

// IsPayloadTooLarge reports whether err is of the payload-too-large class.
func IsPayloadTooLarge(err error) bool { return errors.Is(err, ErrPayloadTooLarge) }

// IsBadGateway reports whether err is of the bad-gateway class.
func IsBadGateway(err error) bool { return errors.Is(err, ErrBadGateway) }

type classed struct {
	class error
	msg   string
}

func (c classed) Error() string        { return c.msg }
func (c classed) Is(target error) bool { return c.class == target }

// codes maps each class to its code and HTTP status, in the order they are
// tested: the first class an error belongs to wins.
var codes = []struct {
	is     func(error) bool
	class  error
	code   string
	status int
}{
	{errdefs.IsInvalidArgument, errdefs.ErrInvalidArgument, CodeInvalidArgument, http.StatusBadRequest},
	{errdefs.IsNotFound, errdefs.ErrNotFound, CodeNotFound, http.StatusNotFound},
	{errdefs.IsConflict, errdefs.ErrConflict, CodeConflict, http.StatusConflict},
	{errdefs.IsFailedPrecondition, errdefs.ErrFailedPrecondition, CodeFailedPrecondition, http.StatusConflict},
	{errdefs.IsPermissionDenied, errdefs.ErrPermissionDenied, CodePermissionDenied, http.StatusForbidden},
	{IsPayloadTooLarge, ErrPayloadTooLarge, CodePayloadTooLarge, http.StatusRequestEntityTooLarge},
	{errdefs.IsResourceExhausted, errdefs.ErrResourceExhausted, CodeResourceExhausted, http.StatusTooManyRequests},
	{errdefs.IsUnavailable, errdefs.ErrUnavailable, CodeUnavailable, http.StatusServiceUnavailable},
	{IsBadGateway, ErrBadGateway, CodeBadGateway, http.StatusBadGateway},
	{errdefs.IsInternal, errdefs.ErrInternal, CodeInternal, http.StatusInternalServerError},
}

// FromError turns an error of any class into its HTTP status and body. An
// error of no known class is internal: a bug, never the caller's fault.
func FromError(err error) (int, ErrorBody) {
	for _, c := range codes {
		if c.is(err) {
			return c.status, ErrorBody{ErrorDetail{Code: c.code, Message: message(err)}}
		}
	}
	return http.StatusInternalServerError, ErrorBody{ErrorDetail{Code: CodeInternal, Message: message(err)}}
}

// maxMessage bounds an error's sentence on the wire. Messages quote what
// they reject with Quote; this catches the one that forgot, or an error
// from below that carries the input (a JSON decoder's, a parser's).
const maxMessage = 1024

func message(err error) string {
	msg := err.Error()
	if len(msg) <= maxMessage {
		return msg
	}
	return Cut(msg, maxMessage) + "…"
}

// ToError turns an error body back into an error of the same class, so that
// errdefs.IsNotFound(err) holds on the client exactly as on the daemon.
func ToError(status int, body ErrorBody) error {
	msg := body.Error.Message
	if msg == "" {
		msg = http.StatusText(status)
	}
	for _, c := range codes {
		if c.code == body.Error.Code {
			return classed{c.class, msg}
		}
	}
	for _, c := range codes {
		if c.status == status {
			return classed{c.class, msg}
		}
	}
	return fmt.Errorf("%s (HTTP %d)", msg, status)
}

// Errorf is a shorthand for a classed error with a formatted sentence.
func Errorf(class error, format string, args ...any) error {
	return classed{class, fmt.Sprintf(format, args...)}
}
