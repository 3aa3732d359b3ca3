package isolation

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/sandboxd/sandboxd/isolation/agent"
)

// A sandbox's memory saved while it runs on (runsc: gVisor saves its
// kernel, every process and their memory, to an image), and sandboxes
// started from it (Spec.Memory). runc has no such thing here: CRIU does
// not work on this kernel.

// Checkpointer is an Engine whose sandboxes' memory can be saved, and
// which starts sandboxes from such an image (Spec.Memory).
type Checkpointer interface {
	// CanCheckpoint says whether this engine's build saves memory
	// (runsc: one from before 2025 has no checkpoint file inside for the
	// agent to wait on).
	CanCheckpoint() bool
}

// CheckpointContainer is a Container whose memory can be saved.
type CheckpointContainer interface {
	// Checkpoint saves the sandbox's memory into folder dir, which
	// exists and is empty, calls paused while the sandbox is still
	// paused after that, and resumes it; with end, once paused returned
	// nil, it ends the sandbox instead (SIGKILL).
	Checkpoint(ctx context.Context, dir string, paused func() error, end bool) error
}

// ErrCheckpointUnsupported is a sandbox whose runtime cannot save its
// memory (runc; an older runsc), or whose agent (an older daemon's)
// cannot make itself ready for it.
var ErrCheckpointUnsupported = errors.New("this sandbox's runtime cannot save its memory")

// checkpointWait bounds a checkpoint when ctx does not: gVisor pauses
// the sandbox while it writes its memory (~50 ms for 50 MiB here).
const checkpointWait = time.Minute

// CanCheckpoint says whether runtime rt's engine can save a sandbox's
// memory.
func (r *Runtime) CanCheckpoint(rt string) bool {
	e, err := r.engine(rt)
	return err == nil && canCheckpoint(e)
}

// canCheckpoint says whether engine e can save a sandbox's memory.
func canCheckpoint(e Engine) bool {
	c, ok := e.(Checkpointer)
	return ok && c.CanCheckpoint()
}

// Checkpoint saves the sandbox's memory into folder dir (made here; it
// must not exist), for sandboxes started from it (Spec.Memory), and
// calls paused (if set) before the sandbox goes on: its files are then
// as its memory knows them, and a sandbox started from the image needs
// them so (gVisor opens again every file it had looked up). The
// sandbox runs on: it is paused only while gVisor writes the image and
// paused runs. It waits for a running execution to end, as another
// execution would. Its agent refuses while a process the daemon started
// beside the interpreter runs (*CheckpointRefusedError); an old agent,
// or a runtime that cannot, is ErrCheckpointUnsupported.
func (s *Sandbox) Checkpoint(ctx context.Context, dir string, paused func() error) error {
	if paused == nil {
		paused = func() error { return nil }
	}
	return s.quiet(ctx, dir, func(ctx context.Context, cp CheckpointContainer) error {
		return errors.Join(cp.Checkpoint(ctx, dir, paused, false), s.listenedAgain(ctx))
	})
}

// Hibernate saves the sandbox's memory into folder dir (made here; it
// must not exist), for a sandbox started from it (Spec.Memory), calls
// saved while the sandbox is paused after that (the caller records the
// image), and ends the sandbox: its files are then as its memory knows
// them. The caller has let go of the sandbox (its end is no crash) and
// stops it after. If the memory cannot be saved, or saved fails, the
// sandbox runs on (an error). Refusals are Checkpoint's. A daemon killed
// before the end leaves the sandbox paused, which the next one resumes.
func (s *Sandbox) Hibernate(ctx context.Context, dir string, saved func() error) error {
	return s.quiet(ctx, dir, func(ctx context.Context, cp CheckpointContainer) error {
		err := cp.Checkpoint(ctx, dir, saved, true)
		if err != nil {
			err = errors.Join(err, s.listenedAgain(ctx))
		}
		return err
	})
}

// listenedAgain connects to the agent of a sandbox that goes on after a
// checkpoint: it listens again once the checkpoint has ended.
func (s *Sandbox) listenedAgain(ctx context.Context) error {
	if _, err := s.connect(ctx, false); err != nil {
		return fmt.Errorf("%w: after the checkpoint: %v", agent.ErrUnresponsive, err)
	}
	return nil
}

// quiet makes folder dir, has the agent close every socket of the host's
// (agent.Conn.Quiesce), and calls save with the sandbox's container, once
// no execution runs (within ctx, or checkpointWait). The agent removes
// its sockets from its folder, and listens there again once the
// checkpoint has ended: the folder is the sandbox user's meanwhile
// (connect seals it again). gVisor would look a socket left there up
// again in every restored copy.
func (s *Sandbox) quiet(ctx context.Context, dir string, save func(context.Context, CheckpointContainer) error) error {
	cp, ok := s.c.(CheckpointContainer)
	if !ok {
		return ErrCheckpointUnsupported
	}
	if err := os.Mkdir(dir, 0o700); err != nil {
		return err
	}
	return s.withAgent(ctx, checkpointWait, func(ctx context.Context, conn *agent.Conn) error {
		if err := s.unsealAgentDir(); err != nil {
			return err
		}
		if err := conn.Quiesce(ctx); err != nil {
			_ = sealAgentDir(s.paths)
			if errors.Is(err, agent.ErrUnsupported) {
				return ErrCheckpointUnsupported
			}
			var refused *agent.RefusedError
			if errors.As(err, &refused) {
				return &CheckpointRefusedError{Reason: refused.Message}
			}
			s.dropConn(conn)
			return err
		}
		s.dropConn(conn)
		return save(ctx, cp)
	})
}

// CheckpointRefusedError is a checkpoint the sandbox's agent refused,
// and why: something in it now cannot be saved (a process started
// beside the interpreter, whose input and output are the host's).
type CheckpointRefusedError struct{ Reason string }

func (e *CheckpointRefusedError) Error() string { return e.Reason }

// dropConn closes conn, the sandbox's connection, which the agent closed.
func (s *Sandbox) dropConn(conn *agent.Conn) {
	s.connMu.Lock()
	if s.conn == conn {
		s.conn = nil
	}
	s.connMu.Unlock()
	conn.Close()
}
