package daemon

import (
	"slices"

	"github.com/sandboxd/sandboxd/api"
)

// historyCut is what the history keeps of e: e itself when it is at most
// keep bytes, else a copy cut to keep and marked summarized (and
// truncated). The answer went out whole; the history is what a client
// reads back later, and history_total_limit records of max_answer_bytes
// each would fill the disk and the daemon's memory (bbolt maps the file).
// Stderr keeps up to a quarter of keep whatever stdout took, so an error
// after much output is still seen; then the error, the result, and the
// rich outputs that fit whole, as an answer is bounded.
func historyCut(e *api.Execution, keep int64) *api.Execution {
	if executionSize(e) <= keep {
		return e
	}
	c := *e
	c.Outputs = slices.Clone(e.Outputs) // bound drops from its slice in place
	errShare := min(int64(len(e.Stderr)), keep/4)
	b := answerBudget{left: keep - errShare}
	c.Stdout = b.text(e.Stdout)
	b.left += errShare
	c.Stderr = b.text(e.Stderr)
	b.bound(&c)
	c.Summarized = true
	return &c
}

// executionSize is the bytes of e's output, result, error and outputs.
func executionSize(e *api.Execution) int64 {
	n := len(e.Stdout) + len(e.Stderr)
	if e.Result != nil {
		n += len(*e.Result)
	}
	if e.Error != nil {
		n += len(e.Error.Name) + len(e.Error.Value) + len(e.Error.Traceback)
	}
	for _, o := range e.Outputs {
		n += int(outputSize(o))
	}
	return int64(n)
}
