package network

import (
	"github.com/google/nftables"
	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"
)

// batchBuffer is the send and receive buffer of the daemon's netlink
// sockets to nftables. A batch is one transaction only when it goes in one
// message (the kernel commits or aborts what one sendmsg carries), and
// the kernel answers each of its messages with an acknowledgement queued
// on the socket at once: a policy of a full allow list (MaxEntries ip:port
// entries, two rules each, some 200 KiB and 500 answers) overflows the
// default buffers (sendmsg: message too long; recvmsg: no buffer space
// available, after the kernel took the batch). nft sizes its socket the
// same way. The memory is taken only as a batch needs it.
const batchBuffer = 8 << 20

// newConn is a connection to nftables whose batches fit its buffers.
func newConn() (*nftables.Conn, error) {
	return nftables.New(nftables.WithSockOptions(bigBuffers))
}

// bigBuffers sizes a socket's buffers to batchBuffer: past the host's
// rmem_max and wmem_max where the daemon may (CAP_NET_ADMIN), else as far
// as they let.
func bigBuffers(c *netlink.Conn) error {
	rc, err := c.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	err = rc.Control(func(fd uintptr) {
		for force, plain := range map[int]int{unix.SO_SNDBUFFORCE: unix.SO_SNDBUF, unix.SO_RCVBUFFORCE: unix.SO_RCVBUF} {
			if unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, force, batchBuffer) == nil {
				continue
			}
			if e := unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, plain, batchBuffer); e != nil {
				serr = e
			}
		}
	})
	if err != nil {
		return err
	}
	return serr
}
