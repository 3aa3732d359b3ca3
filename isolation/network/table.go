package network

import (
	"errors"
	"fmt"
	"net/netip"
	"os"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"
	"golang.org/x/sys/unix"

	"github.com/sandboxd/sandboxd/isolation/netpolicy"
)

// sharedSets are the table's sets every session's rules use.
type sharedSets struct {
	// links are the host sides of the daemon's sandbox links; egress maps
	// each to its session's chain.
	links, egress *nftables.Set
	// never: what no policy opens (metadata, link-local, the daemon's
	// own sandboxes); blocked: what only a CIDR of the policy opens.
	never4, never6, blocked4, blocked6 *nftables.Set
	// host: what of the host open mode does not reach either (hostNets),
	// unless a CIDR of the policy names it.
	host4, host6 *nftables.Set
}

// neverV4 and neverV6 are never reachable; the daemon's subnets join them.
var (
	neverV4 = []netip.Prefix{netip.MustParsePrefix("169.254.0.0/16")}
	neverV6 = []netip.Prefix{netip.MustParsePrefix("fd00:ec2::254/128"), netip.MustParsePrefix("fe80::/10"),
		// NAT64 and 6to4 of link-local IPv4 (netpolicy.Never).
		netip.MustParsePrefix("64:ff9b::a9fe:0/112"), netip.MustParsePrefix("2002:a9fe::/32")}
)

// New sets up the daemon's table (keeping the sessions' chains and sets a
// previous daemon of the instance left) and the host's forwarding.
func New(cfg Config) (*Manager, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	m := &Manager{
		cfg:      cfg,
		table:    &nftables.Table{Family: nftables.TableFamilyINet, Name: tableName(cfg.Instance)},
		pins:     map[string]map[pinKey]pin{},
		policies: map[string]*netpolicy.Policy{},
		bareNone: map[string]bool{},
	}
	if err := enableForwarding(cfg.Subnet6.IsValid()); err != nil {
		return nil, err
	}
	if err := m.setup(); err != nil {
		return nil, fmt.Errorf("nftables table %s: %w", m.table.Name, err)
	}
	return m, nil
}

// Table is the name of the daemon's nftables table (inet family).
func (m *Manager) Table() string { return m.table.Name }

// enableForwarding turns on the host's forwarding, which sandboxes'
// traffic needs, as Docker does; the daemon's forward chain decides what
// of theirs passes, and leaves everything else to the host's own rules.
func enableForwarding(v6 bool) error {
	files := []string{"/proc/sys/net/ipv4/ip_forward"}
	if v6 {
		files = append(files, "/proc/sys/net/ipv6/conf/all/forwarding")
	}
	for _, f := range files {
		if b, err := os.ReadFile(f); err == nil && len(b) > 0 && b[0] == '1' {
			continue
		}
		if err := os.WriteFile(f, []byte("1\n"), 0o644); err != nil {
			return fmt.Errorf("enable forwarding: %w", err)
		}
	}
	return nil
}

func (m *Manager) setup() error {
	c, err := newConn()
	if err != nil {
		return err
	}
	t := c.AddTable(m.table)
	s := sharedSets{
		links:    &nftables.Set{Table: t, Name: "links", KeyType: nftables.TypeIFName},
		egress:   &nftables.Set{Table: t, Name: "egress", KeyType: nftables.TypeIFName, DataType: nftables.TypeVerdict, IsMap: true},
		never4:   &nftables.Set{Table: t, Name: "never4", KeyType: nftables.TypeIPAddr, Interval: true},
		never6:   &nftables.Set{Table: t, Name: "never6", KeyType: nftables.TypeIP6Addr, Interval: true},
		blocked4: &nftables.Set{Table: t, Name: "blocked4", KeyType: nftables.TypeIPAddr, Interval: true},
		blocked6: &nftables.Set{Table: t, Name: "blocked6", KeyType: nftables.TypeIP6Addr, Interval: true},
		host4:    &nftables.Set{Table: t, Name: "host4", KeyType: nftables.TypeIPAddr, Interval: true},
		host6:    &nftables.Set{Table: t, Name: "host6", KeyType: nftables.TypeIP6Addr, Interval: true},
	}
	for _, set := range []*nftables.Set{s.links, s.egress, s.never4, s.never6, s.blocked4, s.blocked6, s.host4, s.host6} {
		if err := c.AddSet(set, nil); err != nil {
			return err
		}
	}
	// The fixed sets are written afresh: a newer daemon may know more.
	never4 := append([]netip.Prefix{m.cfg.Subnet}, neverV4...)
	never6 := neverV6
	if m.cfg.Subnet6.IsValid() {
		never6 = append([]netip.Prefix{m.cfg.Subnet6}, never6...)
	}
	var blocked4, blocked6 []netip.Prefix
	for _, p := range netpolicy.Blocked {
		if insideAny(p, neverV4) || insideAny(p, neverV6) {
			continue // already never
		}
		if p.Addr().Is4() {
			blocked4 = append(blocked4, p)
		} else {
			blocked6 = append(blocked6, p)
		}
	}
	for set, ps := range map[*nftables.Set][]netip.Prefix{s.never4: never4, s.never6: never6, s.blocked4: blocked4, s.blocked6: blocked6} {
		c.FlushSet(set)
		if err := c.SetAddElements(set, prefixElements(ps)); err != nil {
			return err
		}
	}
	m.sets = s
	written, err := m.hostNetsElements(c, true)
	if err != nil {
		return err
	}
	m.baseChains(c)
	if err := c.Flush(); err != nil {
		return err
	}
	written()
	return nil
}

// insideAny reports whether p lies inside one of ps.
func insideAny(p netip.Prefix, ps []netip.Prefix) bool {
	for _, q := range ps {
		if q.Bits() <= p.Bits() && q.Contains(p.Addr()) {
			return true
		}
	}
	return false
}

// baseChains (re)writes the chains hooked into the host's netfilter.
func (m *Manager) baseChains(c *nftables.Conn) {
	t, s := m.table, m.sets
	policy := nftables.ChainPolicyAccept
	chain := func(name string, typ nftables.ChainType, hook *nftables.ChainHook, prio *nftables.ChainPriority) *nftables.Chain {
		ch := c.AddChain(&nftables.Chain{Name: name, Table: t, Type: typ, Hooknum: hook, Priority: prio, Policy: &policy})
		c.FlushChain(ch)
		return ch
	}
	zero := make([]byte, 4)

	// A sandbox sends only from its own address (no spoofing another
	// sandbox, whose DNS pins and policy differ): reverse-path check.
	pre := chain("prerouting", nftables.ChainTypeFilter, nftables.ChainHookPrerouting, nftables.ChainPriorityRaw)
	c.AddRule(rule(t, pre, fromLinks(s.links), one(
		&expr.Fib{Register: reg, FlagSADDR: true, FlagIIF: true, ResultOIF: true},
		&expr.Cmp{Op: expr.CmpOpEq, Register: reg, Data: zero}, drop)))

	// DNS to any address is the daemon's DNS.
	dns := chain("dns", nftables.ChainTypeNAT, nftables.ChainHookPrerouting, nftables.ChainPriorityNATDest)
	for _, p := range []byte{unix.IPPROTO_UDP, unix.IPPROTO_TCP} {
		c.AddRule(rule(t, dns, fromLinks(s.links), dportIs(p, 53), one(
			&expr.Immediate{Register: reg, Data: port(m.cfg.DNSPort)},
			&expr.Redir{RegisterProtoMin: reg, Flags: unix.NF_NAT_RANGE_PROTO_SPECIFIED})))
	}

	// The host answers a sandbox its DNS and IPv6 neighbour discovery,
	// nothing else; nobody off the host starts a connection to the daemon's
	// DNS port.
	in := chain("input", nftables.ChainTypeFilter, nftables.ChainHookInput, nftables.ChainPriorityFilter)
	for _, p := range []byte{unix.IPPROTO_UDP, unix.IPPROTO_TCP} {
		c.AddRule(rule(t, in, fromLinks(s.links), dportIs(p, m.cfg.DNSPort), one(accept)))
	}
	c.AddRule(rule(t, in, fromLinks(s.links), l4proto(unix.IPPROTO_ICMPV6), one(
		&expr.Payload{DestRegister: reg, Base: expr.PayloadBaseTransportHeader, Offset: 0, Len: 1},
		&expr.Range{Op: expr.CmpOpEq, Register: reg, FromData: []byte{133}, ToData: []byte{136}}, accept)))
	c.AddRule(rule(t, in, fromLinks(s.links), one(refuse)))
	// The guard stops only a new connection from off the host: the table
	// outlives a daemon that stopped with sessions kept (or crashed), and
	// then any program may have the port, for a loopback server or as the
	// local port of its own connections, whose answers must come in. What
	// comes over loopback is the host's own, and the DNS server refuses
	// every source that is not a sandbox.
	for _, p := range []byte{unix.IPPROTO_UDP, unix.IPPROTO_TCP} {
		c.AddRule(rule(t, in, dportIs(p, m.cfg.DNSPort), notIIF("lo"), ctState(expr.CtStateBitNEW), one(
			&expr.Meta{Key: expr.MetaKeyIIFNAME, Register: reg},
			&expr.Lookup{SourceRegister: reg, SetName: s.links.Name, SetID: s.links.ID, Invert: true},
			drop)))
	}

	// Nothing starts a connection to a sandbox; what a sandbox starts
	// goes through its session's chain.
	fwd := chain("forward", nftables.ChainTypeFilter, nftables.ChainHookForward, nftables.ChainPriorityFilter)
	c.AddRule(rule(t, fwd, toLinks(s.links), ctState(expr.CtStateBitESTABLISHED|expr.CtStateBitRELATED), one(accept)))
	c.AddRule(rule(t, fwd, toLinks(s.links), one(drop)))
	for _, p := range []byte{unix.IPPROTO_UDP, unix.IPPROTO_TCP} {
		// DNS over TLS would bypass the daemon's DNS.
		c.AddRule(rule(t, fwd, fromLinks(s.links), dportIs(p, 853), one(refuse)))
	}
	c.AddRule(rule(t, fwd, one(
		&expr.Meta{Key: expr.MetaKeyIIFNAME, Register: reg},
		&expr.Lookup{SourceRegister: reg, SetName: s.egress.Name, SetID: s.egress.ID, IsDestRegSet: true, DestRegister: 0})))
	c.AddRule(rule(t, fwd, fromLinks(s.links), one(drop)))

	// What leaves for elsewhere leaves from the host's address.
	post := chain("postrouting", nftables.ChainTypeNAT, nftables.ChainHookPostrouting, nftables.ChainPriorityNATSource)
	c.AddRule(rule(t, post, saddrIn(m.cfg.Subnet), one(&expr.Masq{})))
	if m.cfg.Subnet6.IsValid() {
		c.AddRule(rule(t, post, saddrIn(m.cfg.Subnet6), one(&expr.Masq{})))
	}
}

// Remove deletes the daemon's table and gives its subnet back: for a
// daemon whose sessions are all gone (a running sandbox's policy lives in
// the table).
func (m *Manager) Remove() error {
	err := RemoveTable(m.cfg.Instance)
	if m.cfg.LeaseDir != "" {
		err = errors.Join(err, ReleaseSubnet(m.cfg.LeaseDir, m.cfg.Instance))
	}
	return err
}

// RemoveTable deletes the table of instance, if any: for tests and
// uninstall, when no sandbox of the instance is left.
func RemoveTable(instance string) error {
	c, err := newConn()
	if err != nil {
		return err
	}
	c.DelTable(&nftables.Table{Family: nftables.TableFamilyINet, Name: tableName(instance)})
	if err := c.Flush(); err != nil && !isNotFound(err) {
		return err
	}
	return nil
}
