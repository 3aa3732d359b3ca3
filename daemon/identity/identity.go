// Package identity carries the caller's identity, taken from the socket's
// peer credentials, through a request's context.
package identity

import "context"

type key struct{}

// Caller is who sent a request.
type Caller struct {
	UID uint32
	GID uint32
	PID int32
}

// IsRoot reports whether the caller may see and manage every session.
func (c Caller) IsRoot() bool { return c.UID == 0 }

// With returns ctx carrying c.
func With(ctx context.Context, c Caller) context.Context {
	return context.WithValue(ctx, key{}, c)
}

// From returns the caller in ctx. A context without one is an in-process
// call, which acts as root.
func From(ctx context.Context) Caller {
	c, ok := ctx.Value(key{}).(Caller)
	if !ok {
		return Caller{UID: 0}
	}
	return c
}
