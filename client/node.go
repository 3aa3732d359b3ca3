package client

import (
	"context"

	"github.com/sandboxd/sandboxd/api"
)

// Node describes the daemon as a scheduler sees it: its id, labels,
// capacity and what running sessions hold of it.
func (c *Client) Node(ctx context.Context) (*api.Node, error) {
	var out api.Node
	return &out, c.call(ctx, request{method: "GET", path: "/v1/node"}, &out)
}

// Drain drains the node (on: it takes no new session, its sessions run
// on) or takes new sessions again, and answers the node. Root only.
func (c *Client) Drain(ctx context.Context, on bool) (*api.Node, error) {
	var out api.Node
	return &out, c.call(ctx, request{method: "POST", path: "/v1/node/drain", json: api.DrainRequest{Drain: &on}}, &out)
}
