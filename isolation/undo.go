package isolation

import (
	"context"
	"time"

	"github.com/sandboxd/sandboxd/isolation/agent"
)

// ErrUndoUnsupported is a sandbox whose agent (an older daemon's) parks
// no checkpoints: undo needs the sandbox restarted.
var ErrUndoUnsupported = agent.ErrUnsupported

// undoWait bounds an undo when ctx does not: the agent kills the current
// interpreter and wakes a parked one, without running code.
const undoWait = 30 * time.Second

// Undo puts the interpreter of context name ("": the first) back as it
// was before its last steps executions that parked a checkpoint
// (ExecOptions.Checkpoints), and returns the steps taken back. A context
// that keeps fewer checkpoints is left as it is (the error says how many
// it keeps). It waits for a running execution to end, as another
// execution would.
func (s *Sandbox) Undo(ctx context.Context, name string, steps int) (undone int, err error) {
	err = s.withAgent(ctx, undoWait, func(ctx context.Context, conn *agent.Conn) error {
		undone, err = conn.Undo(ctx, name, steps)
		return err
	})
	return undone, err
}
