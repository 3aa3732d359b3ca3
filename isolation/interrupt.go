package isolation

import (
	"context"
	"errors"

	"github.com/sandboxd/sandboxd/isolation/agent"
)

// ErrInterruptUnsupported is a sandbox whose agent, started by an older
// daemon, cannot interrupt an execution: restarting the sandbox (with this
// daemon's agent) is the way to stop it.
var ErrInterruptUnsupported = agent.ErrUnsupported

// Interrupt interrupts the execution under way in the sandbox, as a
// Python timeout does: Python gets a KeyboardInterrupt (the interpreter,
// its variables with it, is killed and restarted only if that has not
// stopped it within the execution's grace), a shell command SIGINT and,
// after the grace, SIGKILL. That execution's Exec then returns its
// result, with status StatusInterrupted. Interrupt is meant to be
// called while another goroutine is in Exec, and waits for neither the
// execution nor its Exec (it takes no execMu).
//
// It reports whether an execution ran and was sent the interrupt; false,
// and no error, if none ran. An execution that ends on its own just as the
// interrupt is sent answers as it ended (the agent drops an interrupt for
// an execution that is over), though Interrupt said true. An agent too old
// to interrupt fails with ErrInterruptUnsupported while an execution runs.
func (s *Sandbox) Interrupt(ctx context.Context) (bool, error) {
	s.connMu.Lock()
	run, closed := s.running, s.closed
	s.connMu.Unlock()
	if run == nil || closed {
		return false, nil
	}
	if err := run.conn.Interrupt(ctx, run.id); err != nil {
		if errors.Is(err, agent.ErrUnsupported) {
			return false, err
		}
		s.connMu.Lock()
		over := s.running != run || s.closed
		s.connMu.Unlock()
		if over {
			// The execution ended, or the sandbox was let go, under the
			// write's feet: there was nothing left to interrupt.
			return false, nil
		}
		return false, err
	}
	return true, nil
}
