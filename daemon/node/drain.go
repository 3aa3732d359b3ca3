package node

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

// DrainRetryAfter is what a refused create is told to wait.
const DrainRetryAfter = 30 * time.Second

func (n *Node) drainFile() string { return filepath.Join(n.cfg.DataDir, "draining") }

// loadDrain reads whether a previous daemon was draining.
func (n *Node) loadDrain() {
	if _, err := os.Stat(n.drainFile()); err == nil {
		n.draining.Store(true)
		n.log.Warn("this node is draining (sandboxctl node drain --off takes new sessions again)")
	}
}

// Drain turns draining on or off, as root only, and answers the node.
func (n *Node) Drain(ctx context.Context, on bool) (*api.Node, error) {
	if err := n.src.RequireRoot(ctx, "drain the node"); err != nil {
		return nil, err
	}
	if on {
		if err := os.WriteFile(n.drainFile(), nil, 0o644); err != nil {
			return nil, err
		}
	} else if err := os.Remove(n.drainFile()); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	if n.draining.Swap(on) != on {
		state := api.NodeReady
		if on {
			state = api.NodeDraining
		}
		logging.From(ctx).Info("node "+state, "draining", on)
	}
	return n.Node(ctx)
}

// CheckDraining refuses a new session while the node drains.
func (n *Node) CheckDraining() error {
	if !n.draining.Load() {
		return nil
	}
	return api.WithRetryAfter(api.Errorf(errdefs.ErrUnavailable, "this node is draining: it takes no new session (create it on another node)"), DrainRetryAfter)
}

// state is whether the daemon takes new sessions.
func (n *Node) state() string {
	if n.draining.Load() {
		return api.NodeDraining
	}
	return api.NodeReady
}
