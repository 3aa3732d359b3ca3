package execution

import (
	"github.com/containerd/errdefs"

	"github.com/sandboxd/sandboxd/api"
)

// Slots bound the executions running at once, host-wide
// (max_concurrent_execs): one more is refused, not queued, so that a
// client learns at once that the host is full.
type Slots chan struct{}

// NewSlots are n slots.
func NewSlots(n int) Slots { return make(Slots, n) }

// Take holds a slot until Release, or says the host runs its maximum.
func (s Slots) Take() error {
	select {
	case s <- struct{}{}:
		return nil
	default:
		return api.Errorf(errdefs.ErrResourceExhausted, "this host runs its maximum of %d executions at once: try again shortly", cap(s))
	}
}

// Release gives back a slot Take held.
func (s Slots) Release() { <-s }
