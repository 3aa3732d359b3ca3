package daemon

import (
	"context"
	"errors"
	"net"
	"syscall"

	"github.com/containerd/errdefs"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/store"
)

// PortDialer returns a dialer of TCP port inside the session's sandbox,
// for the port proxy (…/ports/{port}/…). It works in every network mode:
// the daemon reaches the sandbox's loopback from inside its namespace.
func (d *Daemon) PortDialer(ctx context.Context, id string, port int) (func(context.Context) (net.Conn, error), error) {
	if port < 1 || port > 65535 {
		return nil, api.Errorf(errdefs.ErrInvalidArgument, "port %d is not between 1 and 65535", port)
	}
	s, err := d.lookupAwake(ctx, id)
	if err != nil {
		return nil, err
	}
	sb := s.Sandbox()
	if sb == nil {
		return nil, api.Errorf(errdefs.ErrConflict, "session %s is not running: start it first", s.ID())
	}
	// A preview is use: the idle timeout counts from it.
	s.Update(func(r *store.Record) { r.LastUsedAt = now() })
	return func(ctx context.Context) (net.Conn, error) {
		c, err := sb.DialPort(ctx, port)
		if errors.Is(err, syscall.ECONNREFUSED) {
			return nil, api.Errorf(api.ErrBadGateway, "nothing listens on port %d in session %s", port, id)
		}
		return c, err
	}, nil
}
