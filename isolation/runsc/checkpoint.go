package runsc

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/sandboxd/sandboxd/isolation"
)

// A runsc sandbox's memory saved while it runs on, and sandboxes
// restored from it (isolation.Checkpointer; see isolation/checkpoint.go).
// Measured with gVisor 2026-09 on this host (no KVM): a checkpoint of a
// sandbox holding 50 MiB takes 52-63 ms and an image of about its
// memory; a restore to the process's next line 177-312 ms, and several
// restores of one image run side by side.

// Pin the implementation to the seam.
var _ isolation.CheckpointContainer = (*gvisorContainer)(nil)

// Checkpoint saves the sandbox into folder dir while it is paused
// (gVisor counts its stops: the checkpoint's own resume leaves it
// paused), calls paused, and resumes it, or with end (paused having
// succeeded) kills it. It speaks to the sandbox's control socket
// (control.go), or runs runsc's commands where it finds none.
// Uncompressed: compression costs more time than the disk saves (an
// image is about the sandbox's memory in use), and a restore reads it at
// once.
func (c *gvisorContainer) Checkpoint(ctx context.Context, dir string, paused func() error, end bool) error {
	ctx, cancel := context.WithTimeout(ctx, runscTimeout)
	defer cancel()
	if _, err := c.rs.controlSocket(c.id); err != nil || !controlSockets {
		return c.checkpointByCommands(ctx, dir, paused, end)
	}
	if err := c.rs.control(ctx, c.id, ctlPause, nil); err != nil {
		return err
	}
	// The mark says a resume is owed, to a daemon that starts after this
	// one was killed (engine.Restore): runsc's state, which its own pause
	// keeps, does not know of this one. Made once the pause has answered
	// and removed before the resume is asked, it is never there for a
	// sandbox that runs (a resume of a kernel not paused is a panic in
	// gVisor); a kill in the instant between the two leaves the sandbox
	// paused, as a kill between the agent's quiesce and the checkpoint
	// leaves it unreachable.
	mark := filepath.Join(c.dir, pausedMark)
	err := os.WriteFile(mark, nil, 0o600)
	if err == nil {
		err = c.rs.checkpointCall(ctx, c.id, dir)
	}
	if err == nil {
		err = paused()
	}
	if err == nil && end {
		return c.Kill()
	}
	if rerr := os.Remove(mark); rerr != nil && !errors.Is(rerr, os.ErrNotExist) {
		return errors.Join(err, rerr) // left paused, with its mark, for a restart to resume
	}
	// Resumed whatever happened, on a context of its own: the caller's
	// may be what ended.
	rctx, rcancel := context.WithTimeout(context.Background(), runscTimeout)
	defer rcancel()
	return errors.Join(err, c.rs.control(rctx, c.id, ctlResume, nil))
}

// pausedMark is the file in a sandbox's folder that says the daemon
// paused it through its control socket and owes it a resume.
const pausedMark = "paused-by-sandboxd"

// resumeOwed resumes sandbox id, whose folder is dir, if a daemon that
// was killed paused it for a checkpoint (its mark is there).
func (rs *runsc) resumeOwed(id, dir string) error {
	mark := filepath.Join(dir, pausedMark)
	if _, err := os.Stat(mark); err != nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), runscTimeout)
	defer cancel()
	if err := os.Remove(mark); err != nil {
		return err
	}
	return rs.control(ctx, id, ctlResume, nil)
}

// checkpointByCommands is Checkpoint through runsc's commands (`runsc
// pause`, `checkpoint --leave-running`, `resume`).
func (c *gvisorContainer) checkpointByCommands(ctx context.Context, dir string, paused func() error, end bool) error {
	if err := c.runscCtx(ctx, "pause", c.id); err != nil {
		return err
	}
	err := c.runscCtx(ctx, "checkpoint", "--leave-running", "--compression", "none", "--image-path", dir, c.id)
	if err == nil {
		err = paused()
	}
	if err == nil && end {
		return c.Kill()
	}
	return errors.Join(err, c.runscCtx(context.Background(), "resume", c.id))
}

// runscCtx runs runsc args on this sandbox within ctx.
func (c *gvisorContainer) runscCtx(ctx context.Context, args ...string) error {
	_, err := c.rs.runCtx(ctx, c.network, args...)
	return err
}

// restoreCommand is `runsc restore` of sandbox s from its Memory, for
// Start in place of create and start: the restored sandbox runs once it
// returns (--detach), with the bundle in dir (its own mounts, hostname,
// network namespace and id block). The spec's check against the
// image's is relaxed to a warning: what differs is what must (the
// sandbox's own ids, folders and namespace), and the daemon starts a
// restore only with the settings of the sandbox it saved.
func (rs *runsc) restoreCommand(ctx context.Context, network, dir, pidFile string, s *isolation.Spec) *exec.Cmd {
	return rs.command(ctx, network, "--restore-spec-validation", "warning",
		"restore", "--detach", "--image-path", s.Memory, "--bundle", dir, "--pid-file", pidFile, s.ID)
}
