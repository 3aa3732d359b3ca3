package network

import (
	"fmt"
	"net"
	"net/netip"
	"slices"
	"sync"
	"time"

	"github.com/google/nftables"
	"github.com/vishvananda/netlink"

	"github.com/sandboxd/sandboxd/isolation/netpolicy"
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

// hostNets are what of the host open mode must not reach beyond the
// ranges every policy blocks: its own addresses (which the input chain
// refuses already) and, for a host on public addresses, the networks of
// every link it is directly connected to (its LAN, a second NIC's
// network) and its uplinks' gateways, which a sandbox's packets would
// otherwise be forwarded to; not those the operator lets open reach
// (Config.OpenHostNetworks). The sets host4 and
// host6 hold them; they are read at the daemon's start and again, at most
// every hostAddrsRefresh, when a session's rules are written, and
// rewritten in that same transaction when they changed. The caller holds
// m.mu.
type hostNets struct {
	at      time.Time
	written string
}

// hostNetsElements adds to batch c what host4 and host6 must hold now, if
// that changed since it was last written; the returned func, called once
// c is flushed, records it as written.
func (m *Manager) hostNetsElements(c *nftables.Conn, force bool) (func(), error) {
	h := &m.hostNets
	if !force && time.Since(h.at) < hostAddrsRefresh {
		return func() {}, nil
	}
	ps, err := m.readHostNets()
	if err != nil {
		return nil, fmt.Errorf("the host's networks: %w", err)
	}
	key := fmt.Sprint(ps)
	if key == h.written && !force {
		h.at = time.Now()
		return func() {}, nil
	}
	var v4, v6 []netip.Prefix
	for _, p := range ps {
		if p.Addr().Is4() {
			v4 = append(v4, p)
		} else {
			v6 = append(v6, p)
		}
	}
	for set, el := range map[*nftables.Set][]netip.Prefix{m.sets.host4: v4, m.sets.host6: v6} {
		c.FlushSet(set)
		if len(el) == 0 {
			continue
		}
		if err := c.SetAddElements(set, prefixElements(el)); err != nil {
			return nil, err
		}
	}
	return func() { h.at, h.written = time.Now(), key }, nil
}

// readHostNets reads the host's addresses, connected networks and
// gateways (hostNets): the ones already blocked (private ranges, the
// daemon's own subnets) and the ones open may reach left out, none inside
// another, in order.
func (m *Manager) readHostNets() ([]netip.Prefix, error) {
	var routes []netlink.Route
	for _, fam := range []int{netlink.FAMILY_V4, netlink.FAMILY_V6} {
		rs, err := Consistent(func() ([]netlink.Route, error) { return netlink.RouteList(nil, fam) })
		if err != nil {
			return nil, err
		}
		routes = append(routes, rs...)
	}
	addrs, err := Consistent(func() ([]netlink.Addr, error) { return netlink.AddrList(nil, netlink.FAMILY_ALL) })
	if err != nil {
		return nil, err
	}
	skip := append(append(append([]netip.Prefix{}, netpolicy.Blocked...), neverV4...), neverV6...)
	skip = append(skip, m.cfg.Subnet)
	skip = append(skip, m.cfg.OpenHostNetworks...)
	if m.cfg.Subnet6.IsValid() {
		skip = append(skip, m.cfg.Subnet6)
	}
	return hostNetsOf(routes, addrs, skip), nil
}

// hostNetsOf is readHostNets on routes (of the main table: their
// default routes' gateways) and addrs (every link's: the address and its
// network).
func hostNetsOf(routes []netlink.Route, addrs []netlink.Addr, skip []netip.Prefix) []netip.Prefix {
	var ps []netip.Prefix
	host := func(ip net.IP) {
		if a, ok := netip.AddrFromSlice(ip); ok && ip != nil {
			a = a.Unmap()
			ps = append(ps, netip.PrefixFrom(a, a.BitLen()))
		}
	}
	for _, r := range routes {
		if r.Dst != nil {
			if ones, _ := r.Dst.Mask.Size(); ones != 0 {
				continue
			}
		}
		host(r.Gw)
		for _, nh := range r.MultiPath {
			host(nh.Gw)
		}
	}
	for _, a := range addrs {
		if a.IPNet == nil {
			continue
		}
		host(a.IP)
		ip, ok := netip.AddrFromSlice(a.IP)
		if ones, _ := a.Mask.Size(); ok && ones > 0 {
			ip = ip.Unmap()
			ps = append(ps, netip.PrefixFrom(ip, min(ones, ip.BitLen())).Masked())
		}
	}
	// Widest first: each kept if no kept one holds it.
	slices.SortFunc(ps, func(a, b netip.Prefix) int {
		if a.Bits() != b.Bits() {
			return a.Bits() - b.Bits()
		}
		return a.Addr().Compare(b.Addr())
	})
	var out []netip.Prefix
	for _, p := range ps {
		if p.Bits() == 0 || insideAny(p, skip) || insideAny(p, out) {
			continue
		}
		out = append(out, p)
	}
	slices.SortFunc(out, func(a, b netip.Prefix) int { return a.Addr().Compare(b.Addr()) })
	return out
}
