package agent

import (
	"context"
	"errors"
	"io"
	"time"
)

// quiesceVersion is the first protocol version with OpQuiesce.
const quiesceVersion = 18

// CheckpointPath is gVisor's file a process reads to wait for the
// sandbox's next checkpoint: the read blocks until one is done, then
// says "resume" (the sandbox checkpointed goes on), "restore" (a copy
// restored from the image runs) or "error" (the checkpoint failed; the
// sandbox goes on).
const CheckpointPath = "/proc/gvisor/checkpoint"

// QuiesceWait is how long a quiet agent waits for the checkpoint before
// it listens again anyway: a daemon that died between OpQuiesce and its
// checkpoint must not leave the sandbox deaf for long. The daemon pauses
// the sandbox (which stops this clock's reader) tens of milliseconds
// after the answer, however long the image then takes to write.
const QuiesceWait = 15 * time.Second

// Quiesce readies a gVisor sandbox for its checkpoint: once it returns,
// the agent has closed this connection and its listeners (gVisor cannot
// save a socket bound on the host), and it listens again, at the same
// paths, once the checkpoint is done (or QuiesceWait has passed), in the
// sandbox and in each copy restored from the image. The agent refuses
// while a process the daemon started runs (its descriptors are the
// host's), or outside gVisor. Like Exec, it must not be called while
// another request waits for its answer. Agents before version 18
// answer ErrUnsupported, and nothing is sent.
func (a *Conn) Quiesce(ctx context.Context) error {
	if err := a.supports(quiesceVersion, "checkpointing a sandbox's memory"); err != nil {
		return err
	}
	if _, err := a.ask(ctx, Request{Op: OpQuiesce}, TypeQuiet); err != nil {
		return err
	}
	return a.awaitClose(ctx)
}

// awaitClose reads until the agent has closed its end, within ctx's
// deadline: once it has, it no longer holds a socket of the host's.
func (a *Conn) awaitClose(ctx context.Context) error {
	dl, _ := ctx.Deadline()
	_ = a.c.SetReadDeadline(dl)
	defer a.c.SetReadDeadline(time.Time{})
	for {
		if _, err := a.lines.next(); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return a.classify(err)
		}
	}
}
