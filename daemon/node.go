package daemon

import "github.com/sandboxd/sandboxd/daemon/node"

// Node is the daemon's node (package daemon/node), which serves the
// API's health, node and drain calls by itself.
func (d *Daemon) Node() *node.Node { return d.node }
