package server

import (
	"context"
	"net"

	"golang.org/x/sys/unix"

	"github.com/sandboxd/sandboxd/internal/identity"
)

type credKey struct{}

// connContext records the peer's credentials when a connection is
// accepted: the kernel vouches for them, so no header can forge a caller.
func connContext(ctx context.Context, c net.Conn) context.Context {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return ctx
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return ctx
	}
	var cred *unix.Ucred
	var cerr error
	if err := raw.Control(func(fd uintptr) {
		cred, cerr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil || cerr != nil {
		return ctx
	}
	return context.WithValue(ctx, credKey{}, identity.Peer(cred.Uid, cred.Gid, cred.Pid))
}

// callerOf returns the caller of a connection; ok is false when it is not
// known, and such a request is refused.
func callerOf(ctx context.Context) (identity.Caller, bool) {
	c, ok := ctx.Value(credKey{}).(identity.Caller)
	return c, ok
}
