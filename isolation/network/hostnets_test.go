package network

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/google/nftables"
	"github.com/vishvananda/netlink"

	"github.com/sandboxd/sandboxd/isolation/netpolicy"
)

func ipnet(s string) *net.IPNet {
	ip, n, err := net.ParseCIDR(s)
	if err != nil {
		panic(err)
	}
	n.IP = ip
	return n
}

// TestHostNetsOf: the host's own addresses, every link's network, and
// its uplinks' gateways, less what is blocked already or open may reach,
// none inside another.
func TestHostNetsOf(t *testing.T) {
	routes := []netlink.Route{
		{LinkIndex: 2, Gw: net.ParseIP("198.51.100.254")},                                                   // default, v4
		{LinkIndex: 2, Dst: ipnet("0.0.0.0/0"), Gw: net.ParseIP("198.51.100.253")},                          // default, as newer kernels list it
		{LinkIndex: 2, Dst: ipnet("::/0"), Gw: net.ParseIP("fe80::1")},                                      // link-local gateway: never anyway
		{LinkIndex: 3, Dst: ipnet("203.0.113.0/24")},                                                        // another link's network, with no default route
		{LinkIndex: 5, Dst: ipnet("0.0.0.0/0"), Gw: net.ParseIP("192.0.2.1")},                               // a second uplink
		{LinkIndex: 6, MultiPath: []*netlink.NexthopInfo{{LinkIndex: 7, Gw: net.ParseIP("2001:db8:7::1")}}}, // multipath
	}
	addrs := []netlink.Addr{
		{LinkIndex: 1, IPNet: ipnet("127.0.0.1/8")},
		{LinkIndex: 2, IPNet: ipnet("198.51.100.1/24")},
		{LinkIndex: 2, IPNet: ipnet("2001:db8:2::5/64")},
		{LinkIndex: 3, IPNet: ipnet("203.0.113.1/24")},
		{LinkIndex: 4, IPNet: ipnet("10.87.0.1/30")}, // a sandbox link's gateway
		{LinkIndex: 5, IPNet: ipnet("192.0.2.9/28")},
		{LinkIndex: 7, IPNet: ipnet("2001:db8:7::9/64")},
	}
	blocked := append(append([]netip.Prefix{}, netpolicy.Blocked...), neverV6...)
	for _, c := range []struct {
		open []netip.Prefix // Config.OpenHostNetworks
		want []string
	}{
		{nil, []string{"192.0.2.0/28", "198.51.100.0/24", "203.0.113.0/24", "2001:db8:2::/64", "2001:db8:7::/64"}},
		{[]netip.Prefix{netip.MustParsePrefix("203.0.113.0/24")}, []string{"192.0.2.0/28", "198.51.100.0/24", "2001:db8:2::/64", "2001:db8:7::/64"}},
	} {
		got := hostNetsOf(routes, addrs, append(slices.Clone(blocked), c.open...))
		var want []netip.Prefix
		for _, s := range c.want {
			want = append(want, netip.MustParsePrefix(s))
		}
		if !slices.Equal(got, want) {
			t.Errorf("open may reach %v: host nets %v, want %v", c.open, got, want)
		}
	}
}

// TestOpenBlocksHostNetworks: a host on public addresses. An uplink the
// test makes (a link into an empty namespace, which sends nothing off the
// host, with
// 198.51.100.1/24 and a default route of the lowest priority through it):
// an open sandbox reaches neither the host's address on it nor its
// network (refused and counted, never sent); a CIDR of allow opens the
// network. IPv6 that embeds IPv4 (NAT64, 6to4, Teredo) is in the blocked
// set, whose refusal is checked by rule (no packet is sent to it).
func TestOpenBlocksHostNetworks(t *testing.T) {
	m := testManager(t, true)
	o := newOutside(t)
	ctx := context.Background()
	name := "sbxtup" + randomID()[:6]
	// A veth whose peer is in a namespace of the test's with nothing in
	// it (this kernel may have no dummy links): what goes there stays.
	void := sandboxNS(t)
	if err := netlink.LinkAdd(&netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: name}, PeerName: "up0", PeerNamespace: netlink.NsFd(int(void.Fd()))}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if l, err := netlink.LinkByName(name); err == nil {
			_ = netlink.LinkDel(l)
		}
	})
	l, err := netlink.LinkByName(name)
	if err != nil {
		t.Fatal(err)
	}
	if err := netlink.AddrAdd(l, &netlink.Addr{IPNet: ipnet("198.51.100.1/24")}); err != nil {
		t.Fatal(err)
	}
	if err := netlink.LinkSetUp(l); err != nil {
		t.Fatal(err)
	}
	if err := netlink.RouteAdd(&netlink.Route{LinkIndex: l.Attrs().Index, Dst: ipnet("0.0.0.0/0"), Gw: net.ParseIP("198.51.100.254"), Priority: 4000000000}); err != nil {
		t.Fatal(err)
	}
	ns := sandboxNS(t)
	m.mu.Lock()
	m.hostNets.at = time.Time{} // the test's uplink came after the manager's start
	m.mu.Unlock()
	a, err := m.Attach(ctx, "s1", 1, ns, mustPolicy(t, netpolicy.ModeOpen))
	if err != nil {
		t.Fatal(err)
	}
	if body, err := get(ns, o.addr); err != nil || body != "outside" {
		t.Fatalf("open: the outside: %q %v", body, err)
	}
	for _, addr := range []string{"198.51.100.1", "198.51.100.7", "198.51.100.254"} {
		before, _ := m.Denied("s1")
		start := time.Now()
		if _, err := get(ns, netip.MustParseAddr(addr)); err == nil {
			t.Fatalf("open reached the host's %s", addr)
		}
		after, _ := m.Denied("s1")
		// The host's own address is refused by the input chain; its LAN
		// by the session's, at once.
		if addr != "198.51.100.1" && (after == before || time.Since(start) > time.Second) {
			t.Errorf("%s: not refused by the session's chain (denied %d -> %d, %v)", addr, before, after, time.Since(start))
		}
	}
	// A CIDR of allow opens the network (its packets then go to the
	// empty namespace: no refusal counted).
	if err := m.SetPolicy(ctx, "s1", a, mustPolicy(t, netpolicy.ModeOpen, "198.51.100.0/24")); err != nil {
		t.Fatal(err)
	}
	before, _ := m.Denied("s1")
	c, err := dialIn(ns, netip.MustParseAddrPort("198.51.100.7:80"))
	if err == nil {
		c.Close()
	}
	if after, _ := m.Denied("s1"); after != before {
		t.Errorf("a CIDR of allow did not open the host's network: refused %d", after-before)
	}

	nc, _ := nftables.New()
	els, err := nc.GetSetElements(m.sets.blocked6)
	if err != nil {
		t.Fatal(err)
	}
	starts := map[string]bool{}
	for _, e := range els {
		if !e.IntervalEnd {
			a, _ := netip.AddrFromSlice(e.Key)
			starts[a.String()] = true
		}
	}
	for _, p := range []string{"64:ff9b::", "2002::", "2001::"} {
		if !starts[p] {
			t.Errorf("blocked6 lacks %s (has %v)", p, starts)
		}
	}
	never, err := nc.GetSetElements(m.sets.never6)
	if err != nil {
		t.Fatal(err)
	}
	if s := fmt.Sprint(never); len(never) == 0 || s == "" {
		t.Fatal("never6 is empty")
	}
	found := false
	for _, e := range never {
		if a, _ := netip.AddrFromSlice(e.Key); a == netip.MustParseAddr("64:ff9b::a9fe:0") && !e.IntervalEnd {
			found = true
		}
	}
	if !found {
		t.Error("never6 lacks NAT64 of 169.254.0.0/16")
	}
}
