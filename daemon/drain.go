package daemon

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"time"

	"github.com/containerd/errdefs"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/internal/logging"
)

// A draining daemon takes no new session (creates and one-shot runs answer
// 503 with Retry-After) while its sessions run on, so that whatever
// schedules onto this host places new work elsewhere before maintenance.
// The state outlives a restart (a file in the data dir): a host drained
// for an upgrade stays drained until someone says otherwise.

// drainRetryAfter is what a refused create is told to wait.
const drainRetryAfter = 30 * time.Second

func (d *Daemon) drainFile() string { return filepath.Join(d.cfg.DataDir, "draining") }

// loadDrain reads whether a previous daemon was draining.
func (d *Daemon) loadDrain() {
	if _, err := os.Stat(d.drainFile()); err == nil {
		d.draining.Store(true)
		d.log.Warn("this node is draining (sandboxctl node drain --off takes new sessions again)")
	}
}

// Drain turns draining on or off, as root only, and answers the node.
func (d *Daemon) Drain(ctx context.Context, on bool) (*api.Node, error) {
	if err := callerFrom(ctx).requireRoot("drain the node"); err != nil {
		return nil, err
	}
	if on {
		if err := os.WriteFile(d.drainFile(), nil, 0o644); err != nil {
			return nil, err
		}
	} else if err := os.Remove(d.drainFile()); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	if d.draining.Swap(on) != on {
		state := api.NodeReady
		if on {
			state = api.NodeDraining
		}
		logging.From(ctx).Info("node "+state, "draining", on)
	}
	return d.Node(ctx)
}

// checkDraining refuses a new session while the node drains.
func (d *Daemon) checkDraining() error {
	if !d.draining.Load() {
		return nil
	}
	return api.WithRetryAfter(api.Errorf(errdefs.ErrUnavailable, "this node is draining: it takes no new session (create it on another node)"), drainRetryAfter)
}

// nodeState is whether the daemon takes new sessions.
func (d *Daemon) nodeState() string {
	if d.draining.Load() {
		return api.NodeDraining
	}
	return api.NodeReady
}
