package network

import (
	"errors"

	"github.com/vishvananda/netlink"
)

// dumpTries bounds Consistent: an interrupted dump means a link, address
// or route changed while the kernel listed them, which other daemons and
// sandboxes starting beside this one do all the time, but not forever.
const dumpTries = 10

// Consistent runs a netlink dump (LinkList, AddrList…) again while the
// kernel says it was interrupted (ErrDumpInterrupted: the answer may miss
// entries or hold stale ones), and returns the first whole answer.
func Consistent[T any](dump func() (T, error)) (T, error) {
	var (
		out T
		err error
	)
	for range dumpTries {
		out, err = dump()
		if !errors.Is(err, netlink.ErrDumpInterrupted) {
			return out, err
		}
	}
	return out, err
}
