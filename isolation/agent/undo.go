package agent

import (
	"context"
	"fmt"
)

// undoVersion is the first protocol version with checkpoints: an exec's
// Checkpoints, its done's Checkpoint, and OpUndo.
const undoVersion = 17

// MaxCheckpoints bounds an exec's Checkpoints: each parked copy of an
// interpreter holds the pages it has not shared since, in the sandbox's
// memory.
const MaxCheckpoints = 16

// Undo puts context name's interpreter ("" : ContextDefault) back as it
// was before its last steps executions that parked a copy of it
// (Request.Checkpoints): the steps-th newest copy becomes the context's
// interpreter, and the current one and the newer copies are killed. It
// returns the steps taken back. A context that keeps fewer copies is
// left as it is, and the agent's error says how many it keeps. Like
// Exec, it must not be called while another request waits for its
// answer. Agents before version 17 answer ErrUnsupported, and nothing is
// sent.
func (a *Conn) Undo(ctx context.Context, name string, steps int) (undone int, err error) {
	if err := a.supports(undoVersion, "undoing an execution"); err != nil {
		return 0, err
	}
	if steps < 1 {
		return 0, fmt.Errorf("agent: undo %d steps: at least 1", steps)
	}
	m, err := a.ask(ctx, Request{Op: OpUndo, Context: name, Steps: steps}, TypeUndone)
	if err != nil {
		return 0, err
	}
	return m.Undone, nil
}
