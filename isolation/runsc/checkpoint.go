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
	_, err := c.rs.controlSocket(c.id)
	bySocket := err == nil && controlSockets
	if err := c.pause(ctx, bySocket); err != nil {
		return err
	}
	if bySocket {
		err = c.rs.checkpointCall(ctx, c.id, dir)
	} else {
		err = c.runscCtx(ctx, "checkpoint", "--leave-running", "--compression", "none", "--image-path", dir, c.id)
	}
	if err == nil {
		err = paused()
	}
	if err == nil && end {
		return c.Kill()
	}
	// Resumed whatever happened, on a context of its own: the caller's
	// may be what ended.
	return errors.Join(err, c.resume(bySocket))
}

// pause pauses the sandbox for a checkpoint: by `runsc pause`, or through
// its control socket and then its mark. The mark says a resume is owed,
// to a daemon that starts after this one was killed (engine.Restore):
// runsc's state, which its own pause keeps, does not know of this one.
// Made once the pause has answered and removed before the resume is
// asked (resume), it is never there for a sandbox that runs (a resume of
// a kernel not paused is a panic in gVisor); a kill in the instant
// between the two leaves the sandbox paused, as a kill between the
// agent's quiesce and the checkpoint leaves it unreachable.
func (c *gvisorContainer) pause(ctx context.Context, bySocket bool) error {
	if !bySocket {
		return c.runscCtx(ctx, "pause", c.id)
	}
	if err := c.rs.control(ctx, c.id, ctlPause, nil); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(c.dir, pausedMark), nil, 0o600); err != nil {
		return errors.Join(err, c.rs.control(ctx, c.id, ctlResume, nil))
	}
	return nil
}

// resume resumes the sandbox pause paused, within runscTimeout.
func (c *gvisorContainer) resume(bySocket bool) error {
	ctx, cancel := context.WithTimeout(context.Background(), runscTimeout)
	defer cancel()
	if !bySocket {
		return c.runscCtx(ctx, "resume", c.id)
	}
	if err := os.Remove(filepath.Join(c.dir, pausedMark)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err // left paused, with its mark, for a restart to resume
	}
	return c.rs.control(ctx, c.id, ctlResume, nil)
}

// pausedMark is the file in a sandbox's folder that says the daemon
// paused it through its control socket and owes it a resume.
const pausedMark = "paused-by-sandboxd"

// resumeOwed resumes sandbox id, whose folder is dir, if a daemon that
// was killed paused it for a checkpoint (its mark is there).
func (rs *runsc) resumeOwed(id, dir string) error {
	err := os.Remove(filepath.Join(dir, pausedMark))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), runscTimeout)
	defer cancel()
	return rs.control(ctx, id, ctlResume, nil)
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
