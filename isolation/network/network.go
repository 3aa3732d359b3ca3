// Package network gives sandboxes a network: a network namespace per
// sandbox, joined to the host by a veth pair with addresses from the
// daemon's subnet (netlink, no ip command), and the egress policy of the
// session enforced on the host side with nftables, where nothing in the
// sandbox can reach it.
//
// Each daemon instance owns one nftables table, "sandboxd-<instance>" in
// the inet family, and nothing else: its base chains guard the host and
// every sandbox link of the daemon, and each session has a chain
// ("s_<id>"), sets of the addresses its DNS answers pinned ("p4_<id>",
// "p6_<id>", and with ports "pp4_<id>", "pp6_<id>") and a counter of what
// it was refused ("deny_<id>"). Links carry the alias
// "sandboxd/<instance>/<id>", so a daemon finds its own among the host's
// by its instance id, never by a name pattern. See docs/network.md.
//
// A daemon talks to its Service (Open), which owns the Manager, the slots
// of the subnet, the index of sandbox addresses and the DNS server
// (isolation/netdns) that answers by it.
package network

import (
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/nftables"

	"github.com/sandboxd/sandboxd/isolation/netpolicy"
)

// Config is what the manager of one daemon instance needs.
type Config struct {
	// Instance is the daemon's instance id: it names the table and marks
	// the links.
	Instance string
	// Subnet is the daemon's IPv4 block; each sandbox takes a /30 of it.
	Subnet netip.Prefix
	// Subnet6, if valid, is a /96 of IPv6 sandboxes get addresses from
	// (the IPv4 address in its low 32 bits); invalid: no IPv6.
	Subnet6 netip.Prefix
	// DNSPort is the port of the daemon's DNS server on the host: DNS
	// from a sandbox, to any address, goes there.
	DNSPort uint16
	// LeaseDir, if set, is where Subnet is leased (SubnetLease): Remove
	// gives it back.
	LeaseDir string
	// OpenHostNetworks are networks directly connected to the host that
	// policy open may reach all the same (the operator's choice: none by
	// default, see hostNets).
	OpenHostNetworks []netip.Prefix
}

// Manager makes and removes sandboxes' networks and their policies.
type Manager struct {
	cfg   Config
	table *nftables.Table
	// mu serializes the batches sent to nftables, and guards pins.
	mu   sync.Mutex
	sets sharedSets
	pins map[string]map[pinKey]pin
	// policies are the policies this manager put in force, by session.
	policies map[string]*netpolicy.Policy
	// bareNone are the sessions whose chain holds the rules of policy
	// none alone, as this manager wrote it whole (see setPolicy).
	bareNone map[string]bool
	host     hostAddrs
	hostNets hostNets
	// conntrackReads counts the reads of the host's conntrack table, an
	// address family each (flushConntrack): the costly part of a detach.
	conntrackReads atomic.Int64
}

// tableName is the nftables table of a daemon instance.
func tableName(instance string) string { return "sandboxd-" + instance }

// Validate says what is wrong with c, if anything.
func (c *Config) Validate() error {
	if c.Instance == "" {
		return errors.New("network: no instance id")
	}
	if !c.Subnet.IsValid() || !c.Subnet.Addr().Is4() || c.Subnet.Bits() > 29 {
		return fmt.Errorf("[network] subnet %s: an IPv4 block of /29 or wider is needed", c.Subnet)
	}
	for _, n := range neverV4 {
		if c.Subnet.Overlaps(n) {
			return fmt.Errorf("[network] subnet %s overlaps %s, which sandboxes must never reach", c.Subnet, n)
		}
	}
	if c.Subnet6.IsValid() && (!c.Subnet6.Addr().Is6() || c.Subnet6.Bits() != 96) {
		return fmt.Errorf("[network] subnet6 %s: a /96 of IPv6 is needed", c.Subnet6)
	}
	return nil
}

// Slots is how many sandboxes fit in the subnet.
func (c *Config) Slots() int { return 1 << (32 - c.Subnet.Bits() - 2) }

// Slots is how many sandboxes fit in the daemon's subnet.
func (m *Manager) Slots() int { return m.cfg.Slots() }

// pinKey is one pinned destination: an address, and a port (0: every port).
type pinKey struct {
	addr netip.Addr
	port uint16
}

type pin struct {
	name    string
	expires time.Time
}

// Where are the daemon's subnets ("" for none) and its table.
func (m *Manager) Where() (subnet, subnet6, table string) {
	if m.cfg.Subnet6.IsValid() {
		subnet6 = m.cfg.Subnet6.String()
	}
	return m.cfg.Subnet.String(), subnet6, m.table.Name
}
