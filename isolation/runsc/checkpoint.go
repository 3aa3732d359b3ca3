package runsc

import (
	"context"
	"errors"
	"os/exec"

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

// Checkpoint saves the sandbox into folder dir with `runsc checkpoint
// --leave-running` while it is paused (`runsc pause`: gVisor counts its
// stops, and the checkpoint's own resume leaves it paused), calls
// paused, and resumes it, or with end (paused having succeeded) kills
// it. Uncompressed: compression costs more time than the disk saves (an
// image is about the sandbox's memory in use), and a restore reads it at
// once.
func (c *gvisorContainer) Checkpoint(ctx context.Context, dir string, paused func() error, end bool) error {
	ctx, cancel := context.WithTimeout(ctx, runscTimeout)
	defer cancel()
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
	// Resumed whatever happened, on a context of its own: the caller's
	// may be what ended.
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
