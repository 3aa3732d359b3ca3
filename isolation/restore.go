package isolation

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"time"

	"github.com/sandboxd/sandboxd/isolation/agent"
)

// Restore takes back a sandbox a previous daemon started and left running
// (or died leaving running): its container (its engine's Restore: its
// init is watched through a pidfd, since this daemon is not its parent)
// and its agent. s needs ID and Tmp; OnUndelivered hears of an execution
// that ended while no daemon listened. An agent still busy with such an
// execution is connected to later, by the next Exec. A frozen (paused)
// sandbox is thawed, so that its agent answers: the caller freezes it
// again.
func (r *Runtime) Restore(ctx context.Context, s *Spec) (*Sandbox, error) {
	e, err := r.engine(s.Runtime)
	if err != nil {
		return nil, err
	}
	ld, err := e.Restore(r.launch(s, r.pathsOf(s.ID), e))
	if err != nil {
		return nil, err
	}
	sb := r.newSandbox(s, ld)
	if err := sb.begin(ld); err != nil {
		return nil, err
	}
	return sb.reconnect(ctx)
}

// reconnect connects a restored sandbox's agent. An agent that accepts
// but does not answer yet is busy: it is kept, and connected to later; so
// is one whose socket's backlog is full.
// So is one that does not listen, in a sandbox whose agent makes its own
// socket (runsc): a daemon was killed during a checkpoint (see
// checkpoint.go), and the agent listens again once it has ended, or
// after agent.QuiesceWait.
func (sb *Sandbox) reconnect(ctx context.Context) (*Sandbox, error) {
	cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if _, err := sb.connect(cctx, false); err != nil && !keptUnconnected(err, sb.paths.agentListens()) {
		_ = sb.destroy()
		return nil, fmt.Errorf("sandbox agent: %w", err)
	}
	return sb, nil
}

// keptUnconnected says whether a restored sandbox whose agent's connect
// failed with err is kept, to be connected to later: its agent is busy,
// or its socket is there with a full backlog, or, where the agent makes
// its own socket, that socket is not there yet.
func keptUnconnected(err error, agentListens bool) bool {
	switch {
	case errors.Is(err, agent.ErrUnresponsive), errors.Is(err, syscall.EAGAIN):
		return true
	case agentListens:
		return errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.ECONNREFUSED)
	}
	return false
}

// begin starts watching the sandbox's container (Launched.Begin): Exited
// closes once its first process has exited.
func (sb *Sandbox) begin(ld *Launched) error {
	wait, err := ld.Begin(sb.exited, sb.reclaim)
	if err != nil {
		return err
	}
	go func() {
		sb.setExit(wait())
		close(sb.exited)
	}()
	return nil
}
