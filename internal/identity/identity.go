// Package identity carries who sent a request through its context. It
// fails closed: a context that carries no caller is nobody, who may see
// and do nothing; the daemon's own work (restores, the reaper, the warm
// pools) says so explicitly with Internal.
package identity

import "context"

type key struct{}

// kind is how a caller is known.
type kind uint8

const (
	nobody   kind = iota // the zero Caller: unknown
	peer                 // a client, from the socket's peer credentials
	internal             // the daemon itself
)

// Caller is who sent a request. The zero Caller is nobody.
type Caller struct {
	UID  uint32
	GID  uint32
	PID  int32
	kind kind
}

// Peer is a client identified by its socket's peer credentials.
func Peer(uid, gid uint32, pid int32) Caller {
	return Caller{UID: uid, GID: gid, PID: pid, kind: peer}
}

// Internal is the daemon acting on its own behalf.
func Internal() Caller { return Caller{kind: internal} }

// Known reports whether the caller is someone: a peer or the daemon.
func (c Caller) Known() bool { return c.kind != nobody }

// IsRoot reports whether the caller may see and manage every session and
// template: uid 0 over the socket, or the daemon itself.
func (c Caller) IsRoot() bool {
	return c.kind == internal || c.kind == peer && c.UID == 0
}

// Owns reports whether the caller is the given owner uid: root is not
// anyone else.
func (c Caller) Owns(owner uint32) bool { return c.kind == peer && c.UID == owner }

// With returns ctx carrying c.
func With(ctx context.Context, c Caller) context.Context {
	return context.WithValue(ctx, key{}, c)
}

// From returns the caller in ctx; nobody when there is none.
func From(ctx context.Context) Caller {
	c, _ := ctx.Value(key{}).(Caller)
	return c
}
