package api

import (
	"fmt"
	"testing"
	"time"

	"github.com/containerd/errdefs"
)

func TestRetryAfter(t *testing.T) {
	full := errdefs.ErrResourceExhausted.WithMessage("too many sessions")
	cases := []struct {
		name string
		err  error
		want time.Duration
		ok   bool
	}{
		{"a hint", WithRetryAfter(full, 3*time.Second), 3 * time.Second, true},
		{"a hint under a wrap", fmt.Errorf("create: %w", WithRetryAfter(full, time.Minute)), time.Minute, true},
		{"the outermost of two hints", WithRetryAfter(WithRetryAfter(full, time.Second), 2*time.Second), 2 * time.Second, true},
		{"no hint", full, 0, false},
		{"no error", nil, 0, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d, ok := RetryAfter(c.err)
			if d != c.want || ok != c.ok {
				t.Fatalf("%v %v, want %v %v", d, ok, c.want, c.ok)
			}
			if c.err == nil {
				return
			}
			// The hint changes neither class nor message nor answer.
			status, body := FromError(c.err)
			if !errdefs.IsResourceExhausted(c.err) || status != 429 || body.Error.Message != c.err.Error() {
				t.Fatalf("%v: %d %+v", c.err, status, body)
			}
		})
	}
	if WithRetryAfter(nil, time.Second) != nil {
		t.Fatal("a hint on no error is no error")
	}
}
