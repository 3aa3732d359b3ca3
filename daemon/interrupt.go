package daemon

import (
	"context"
	"errors"

	"github.com/containerd/errdefs"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/internal/logging"
	"github.com/sandboxd/sandboxd/isolation"
)

// Interrupt interrupts the execution running in session id (SIGINT, for
// Python a KeyboardInterrupt; the kill after interrupt_grace_s): the Exec
// waiting for it answers status interrupted. It reports whether an
// execution ran; false, and no error, if none did or the session does not
// run. It waits for no operation of the session (nor for the execution):
// stopping a runaway execution is what it is for.
func (d *Daemon) Interrupt(ctx context.Context, id string) (bool, error) {
	s, err := d.lookup(ctx, id)
	if err != nil {
		return false, err
	}
	sb := s.Sandbox()
	if sb == nil {
		return false, nil
	}
	ok, err := sb.Interrupt(ctx)
	if errors.Is(err, isolation.ErrInterruptUnsupported) {
		return false, api.Errorf(errdefs.ErrConflict, "session %s runs an agent too old to interrupt: restart the session", id)
	}
	if err != nil {
		return false, err
	}
	if ok {
		logging.From(ctx).Info("execution interrupted", "session", id)
	}
	return ok, nil
}
