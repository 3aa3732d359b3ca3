package network

import (
	"net/netip"
	"sync"
	"time"

	"github.com/vishvananda/netlink"
)

// hostAddrs are the host's own addresses, which no DNS answer to a
// sandbox may carry (a name rebound to the host), read again at most
// every refresh.
type hostAddrs struct {
	mu   sync.Mutex
	at   time.Time
	addr map[netip.Addr]bool
}

const hostAddrsRefresh = 2 * time.Second

// IsHostAddr reports whether a is an address of the host.
func (m *Manager) IsHostAddr(a netip.Addr) bool {
	h := &m.host
	h.mu.Lock()
	defer h.mu.Unlock()
	if time.Since(h.at) > hostAddrsRefresh {
		if addrs, err := Consistent(func() ([]netlink.Addr, error) { return netlink.AddrList(nil, netlink.FAMILY_ALL) }); err == nil {
			h.addr = map[netip.Addr]bool{}
			for _, x := range addrs {
				if ip, ok := netip.AddrFromSlice(x.IP); ok {
					h.addr[ip.Unmap()] = true
				}
			}
			h.at = time.Now()
		}
	}
	return h.addr[a.Unmap()]
}
