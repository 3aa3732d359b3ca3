package api

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/containerd/errdefs"
)

func TestErrorRoundTrip(t *testing.T) {
	cases := []struct {
		err    error
		status int
		code   string
		is     func(error) bool
	}{
		{errdefs.ErrInvalidArgument.WithMessage("bad"), http.StatusBadRequest, CodeInvalidArgument, errdefs.IsInvalidArgument},
		{fmt.Errorf("wrapped: %w", errdefs.ErrNotFound), http.StatusNotFound, CodeNotFound, errdefs.IsNotFound},
		{Errorf(errdefs.ErrConflict, "session %s is stopped", "x"), http.StatusConflict, CodeConflict, errdefs.IsConflict},
		{Errorf(errdefs.ErrFailedPrecondition, "keeps no checkpoints"), http.StatusConflict, CodeFailedPrecondition, errdefs.IsFailedPrecondition},
		{errdefs.ErrPermissionDenied.WithMessage("not yours"), http.StatusForbidden, CodePermissionDenied, errdefs.IsPermissionDenied},
		{ErrPayloadTooLarge.WithMessage("big"), http.StatusRequestEntityTooLarge, CodePayloadTooLarge, IsPayloadTooLarge},
		{errdefs.ErrResourceExhausted, http.StatusTooManyRequests, CodeResourceExhausted, errdefs.IsResourceExhausted},
		{errdefs.ErrUnavailable, http.StatusServiceUnavailable, CodeUnavailable, errdefs.IsUnavailable},
		{errors.New("a bug"), http.StatusInternalServerError, CodeInternal, errdefs.IsInternal},
	}
	for _, c := range cases {
		status, body := FromError(c.err)
		if status != c.status || body.Error.Code != c.code || body.Error.Message != c.err.Error() {
			t.Errorf("%v: got %d %+v", c.err, status, body)
		}
		back := ToError(status, body)
		if !c.is(back) || back.Error() != c.err.Error() {
			t.Errorf("%v: client side error %v does not keep the class", c.err, back)
		}
	}
}

func TestToErrorUnknownCode(t *testing.T) {
	err := ToError(http.StatusNotFound, ErrorBody{ErrorDetail{Code: "something_new", Message: "gone"}})
	if !errdefs.IsNotFound(err) || err.Error() != "gone" {
		t.Fatalf("an unknown code falls back to the status: %v", err)
	}
	err = ToError(418, ErrorBody{})
	if err == nil || err.Error() == "" {
		t.Fatal("an empty body still gives a message")
	}
}

// TestLongMessageIsCut: no message on the wire is over 1 KiB, whatever
// an error from below carried.
func TestLongMessageIsCut(t *testing.T) {
	long := strings.Repeat("é", 100<<10)
	status, body := FromError(Errorf(errdefs.ErrInvalidArgument, "bad: %s", long))
	if m := body.Error.Message; status != 400 || len(m) > maxMessage+len("…") || !strings.HasSuffix(m, "…") || !utf8.ValidString(m) {
		t.Fatalf("%d, a message of %d bytes", status, len(m))
	}
}
