package main

import (
	"context"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/daemon/node"
	"github.com/sandboxd/sandboxd/daemon/server"
)

// system serves the API's system area: the daemon's node (package
// daemon/node) answers health, the node and drain; the daemon its info
// and events, which read the whole daemon.
type system struct {
	nodeCalls
	daemonFacts
}

// nodeCalls are the system area's calls the node answers.
type nodeCalls interface {
	Health(ctx context.Context) (*api.Health, error)
	Node(ctx context.Context) (*api.Node, error)
	Drain(ctx context.Context, on bool) (*api.Node, error)
}

// daemonFacts are the system area's calls the daemon answers itself.
type daemonFacts interface {
	Info(ctx context.Context) (*api.Info, error)
	Events(ctx context.Context, f api.EventFilter, send func(*api.SessionEvent) error) error
}

var (
	_ server.SystemBackend = system{}
	_ nodeCalls            = (*node.Node)(nil)
)
