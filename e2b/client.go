package e2b

import (
	"context"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/client"
)

// FromClient is the daemon of a sandboxd client.
func FromClient(c *client.Client) Daemon { return clientDaemon{c} }

type clientDaemon struct{ *client.Client }

func (c clientDaemon) SetDeadline(ctx context.Context, id string, seconds int) (*api.Session, error) {
	return c.UpdateSession(ctx, id, api.UpdateSessionRequest{DeadlineS: &seconds})
}
