package isolation

import (
	"testing"

	"github.com/sandboxd/sandboxd/isolation/agent"
)

// TestCheckpointsOnTheWire: an execution's Checkpoints go in its request
// and the done's checkpoint comes back in its result.
func TestCheckpointsOnTheWire(t *testing.T) {
	o := ExecOptions{Language: agent.LanguagePython, Code: "1", Checkpoints: 3}
	if got := o.request().Checkpoints; got != 3 {
		t.Errorf("request's checkpoints = %d, want 3", got)
	}
	if r := resultOf(&agent.Message{Type: agent.TypeDone, Checkpoint: true}); !r.Checkpoint {
		t.Error("the done's checkpoint is not in the result")
	}
	if r := resultOf(&agent.Message{Type: agent.TypeDone}); r.Checkpoint {
		t.Error("a done without a checkpoint says one in the result")
	}
}
