package network

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strings"
	"time"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"
	"github.com/google/nftables/userdata"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"github.com/sandboxd/sandboxd/isolation/netpolicy"
)

// sessionSets are one session's sets of pinned addresses.
type sessionSets struct {
	p4, p6, pp4, pp6 *nftables.Set
	deny             *nftables.CounterObj
	chain            *nftables.Chain
}

func (m *Manager) sessionObjects(id string) *sessionSets {
	t := m.table
	ap4, _ := nftables.ConcatSetType(nftables.TypeIPAddr, nftables.TypeInetService)
	ap6, _ := nftables.ConcatSetType(nftables.TypeIP6Addr, nftables.TypeInetService)
	return &sessionSets{
		p4:    &nftables.Set{Table: t, Name: "p4_" + id, KeyType: nftables.TypeIPAddr, HasTimeout: true},
		p6:    &nftables.Set{Table: t, Name: "p6_" + id, KeyType: nftables.TypeIP6Addr, HasTimeout: true},
		pp4:   &nftables.Set{Table: t, Name: "pp4_" + id, KeyType: ap4, HasTimeout: true, Concatenation: true},
		pp6:   &nftables.Set{Table: t, Name: "pp6_" + id, KeyType: ap6, HasTimeout: true, Concatenation: true},
		deny:  &nftables.CounterObj{Table: t, Name: "deny_" + id},
		chain: &nftables.Chain{Table: t, Name: "s_" + id},
	}
}

// Attach gives session id's sandbox, whose network namespace ns is, its
// network in slot with policy p: the link (unless the namespace has it
// already: a restored sandbox), the session's chain and sets. A failure
// leaves no link behind.
func (m *Manager) Attach(ctx context.Context, id string, slot uint32, ns *os.File, p *netpolicy.Policy) (_ *Attachment, retErr error) {
	a := m.Plan(id, slot)
	h := netns.NsHandle(ns.Fd())
	fresh := !m.linked(id, h, a)
	if !fresh && !m.knows(id) {
		return a, m.rebuild(id, a, p)
	}
	if fresh {
		defer func() {
			if retErr != nil {
				_ = m.removeLink(id)
			}
		}()
		if err := nsSysctls(h, a.Addr6.IsValid()); err != nil {
			return nil, err
		}
		if err := m.makeLink(id, h, a); err != nil {
			return nil, err
		}
	}
	// A new link has carried no connection to cut.
	if err := m.setPolicy(ctx, id, a, p, !fresh); err != nil {
		return nil, err
	}
	return a, nil
}

// knows says this manager put a policy of session id in force.
func (m *Manager) knows(id string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, known := m.policies[id]
	return known
}

// rebuild writes the chain and sets of session id, whose link a previous
// daemon left (a restart, a crash), anew from its recorded policy p:
// nothing the kernel holds is trusted, for that daemon may have died
// between a change's commit and its record (the kernel then holds a
// policy the record does not), or during a package install (the index's
// opening). Its pins go too: the sandbox's DNS pins again what p allows.
// The connections stay when the chain held p's own rules (its final rule
// carries p's fingerprint, written in the same transaction); any others
// are cut, to be checked against p at their next packet.
func (m *Manager) rebuild(id string, a *Attachment, p *netpolicy.Policy) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	cut := m.heldFingerprint(id) != Fingerprint(p)
	if err := m.write(id, a, p, false, true); err != nil {
		m.closeLink(a)
		return fmt.Errorf("session %s policy: %w", id, err)
	}
	m.policies[id] = p
	m.bareNone[id] = p.Mode == netpolicy.ModeNone
	m.pins[id] = map[pinKey]pin{}
	if !cut {
		return nil
	}
	return m.flushConntrack(a)
}

// heldFingerprint is the fingerprint of the policy session id's chain
// holds in the kernel ("" if none is found). The caller holds m.mu.
func (m *Manager) heldFingerprint(id string) string {
	c, err := newConn()
	if err != nil {
		return ""
	}
	rules, err := c.GetRules(m.table, m.sessionObjects(id).chain)
	if err != nil {
		return ""
	}
	// A policy put ahead of none's (setPolicy) comes first: its own
	// final rule is the first that carries one.
	for _, r := range rules {
		if f, ok := userdata.GetString(r.UserData, userdata.TypeComment); ok && strings.HasPrefix(f, fingerprintPrefix) {
			return f
		}
	}
	return ""
}

// fingerprintPrefix starts the comment of a policy's final rule.
const fingerprintPrefix = "sandboxd policy "

// Fingerprint names policy p: its final rule carries it, so that a later
// daemon (and a test) can tell whether the kernel holds p.
func Fingerprint(p *netpolicy.Policy) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\n%d\n%d\n", p.Mode, p.EgressKbps, p.MaxConnections)
	for _, e := range p.Entries {
		fmt.Fprintf(h, "%s\n", e.Raw)
	}
	return fingerprintPrefix + hex.EncodeToString(h.Sum(nil)[:16])
}

// SetPolicy writes session id's chain for policy p and cuts the
// connections the new policy would not let start (the ones it allows
// carry on: conntrack picks them up again as new, and they pass). A
// change is all or nothing: on any error the policy in force before is
// written again.
func (m *Manager) SetPolicy(ctx context.Context, id string, a *Attachment, p *netpolicy.Policy) error {
	return m.setPolicy(ctx, id, a, p, true)
}

// failCommitted, if set (by tests), fails a policy change after the
// kernel took it, as a lost answer from the kernel would.
var failCommitted func() error

// setPolicy is SetPolicy; cut false skips the cutting where no connection
// can be: the session's link is new, or its policy so far was none (a
// pooled sandbox's, made ahead). Reading the conntrack table is the
// costliest part of a policy change.
//
// Rewriting a chain that exists (its rules deleted, new ones added, even
// the chain added again unchanged) makes the kernel's commit wait for an
// RCU grace period: 12–15 ms on the 2-core test host, for every such
// batch. Adding rules to a chain does not (0.1–0.2 ms). So a chain that
// holds policy none's rules alone, as a whole write of this manager left
// it (a pooled sandbox's, made ahead), gets the new policy's rules put
// ahead of its own: nothing reaches the old ones after the new policy's
// final verdict. A claim from a warm pool pays for that alone. The chain
// is written whole at every other change, which leaves no dead rules to
// pile up.
func (m *Manager) setPolicy(ctx context.Context, id string, a *Attachment, p *netpolicy.Policy, cut bool) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.mayCarry(id) {
		cut = false
	}
	old := m.policies[id]
	prepend := m.bareNone[id] && p.Mode != netpolicy.ModeNone
	err := m.write(id, a, p, prepend, false)
	if err == nil && failCommitted != nil {
		err = failCommitted()
	}
	if err != nil {
		return errors.Join(fmt.Errorf("session %s policy: %w", id, err), m.rollback(id, a, old))
	}
	m.policies[id] = p
	m.bareNone[id] = p.Mode == netpolicy.ModeNone && !prepend
	o := m.sessionObjects(id)
	m.dropPins(id, o, p)
	if !cut {
		return nil
	}
	if err := m.flushConntrack(a); err != nil {
		return errors.Join(err, m.rollback(id, a, old))
	}
	return nil
}

// rollback puts policy old (none if the manager had put none in force)
// back in force, written whole, after a change that failed: the kernel
// may have taken the change (its answer lost) or not. If even that
// fails, the link's traffic stops: its jump to the session's chain goes,
// and the forward chain drops what comes from a link with none. The
// caller holds m.mu.
func (m *Manager) rollback(id string, a *Attachment, old *netpolicy.Policy) error {
	if old == nil {
		old = &netpolicy.Policy{Mode: netpolicy.ModeNone}
	}
	if err := m.write(id, a, old, false, false); err != nil {
		m.closeLink(a)
		return fmt.Errorf("session %s: the policy in force before could not be written again, so the sandbox's traffic is stopped: %w", id, err)
	}
	m.policies[id] = old
	m.bareNone[id] = old.Mode == netpolicy.ModeNone
	return nil
}

// closeLink takes the link's jump to its session's chain out of the
// egress map: what it sends is then dropped (the forward chain's last
// rule for sandbox links).
func (m *Manager) closeLink(a *Attachment) {
	_ = m.batch(func(c *nftables.Conn) error {
		return c.SetDeleteElements(m.sets.egress, []nftables.SetElement{{Key: ifname(a.Link)}})
	})
}

// write puts policy p in force for session id in one nftables
// transaction: its rules ahead of the chain's (prepend, see setPolicy) or
// the chain written whole; flushPins empties its pin sets in the same
// transaction. The caller holds m.mu.
func (m *Manager) write(id string, a *Attachment, p *netpolicy.Policy, prepend, flushPins bool) error {
	c, err := newConn()
	if err != nil {
		return err
	}
	o := m.sessionObjects(id)
	t, s := m.table, m.sets
	ch := o.chain
	if !prepend {
		for _, set := range []*nftables.Set{o.p4, o.p6, o.pp4, o.pp6} {
			if err := c.AddSet(set, nil); err != nil {
				return err
			}
			if flushPins {
				c.FlushSet(set)
			}
		}
		c.AddObj(o.deny)
		ch = c.AddChain(o.chain)
		c.FlushChain(ch)
	}
	var rules []*nftables.Rule
	add := func(r *nftables.Rule) { rules = append(rules, r) }
	deny := one(&expr.Objref{Type: int(nftables.ObjTypeCounter), Name: o.deny.Name}, refuse)

	// The rate cap polices every packet the sandbox sends, before
	// anything is accepted.
	if p.EgressKbps > 0 {
		bytesPerS := uint64(p.EgressKbps) * 1000 / 8
		add(rule(t, ch, one(&expr.Limit{Type: expr.LimitTypePktBytes, Rate: bytesPerS, Unit: expr.LimitTimeSecond,
			Over: true, Burst: uint32(max(bytesPerS/10, 64<<10))}, drop)))
	}
	add(rule(t, ch, ctState(expr.CtStateBitESTABLISHED|expr.CtStateBitRELATED), one(accept)))
	if p.MaxConnections > 0 {
		// Counted by this rule, which every new connection of the sandbox
		// meets: the one over the cap is refused.
		add(rule(t, ch, one(&expr.Connlimit{Count: uint32(p.MaxConnections), Flags: 1}), deny))
	}
	add(rule(t, ch, daddrInSet(false, s.never4), deny))
	add(rule(t, ch, daddrInSet(true, s.never6), deny))
	for _, e := range p.Entries {
		if e.Host != "" {
			continue
		}
		if e.Port == 0 {
			add(rule(t, ch, daddrIn(e.Prefix), one(accept)))
			continue
		}
		for _, proto := range []byte{unix.IPPROTO_TCP, unix.IPPROTO_UDP} {
			add(rule(t, ch, daddrIn(e.Prefix), dportIs(proto, e.Port), one(accept)))
		}
	}
	add(rule(t, ch, daddrInSet(false, s.blocked4), deny))
	add(rule(t, ch, daddrInSet(true, s.blocked6), deny))
	add(rule(t, ch, daddrInSet(false, s.host4), deny))
	add(rule(t, ch, daddrInSet(true, s.host6), deny))
	add(rule(t, ch, daddrInSet(false, o.p4), one(accept)))
	add(rule(t, ch, daddrInSet(true, o.p6), one(accept)))
	for _, proto := range []byte{unix.IPPROTO_TCP, unix.IPPROTO_UDP} {
		add(rule(t, ch, daddrPortInSet(false, proto, o.pp4), one(accept)))
		add(rule(t, ch, daddrPortInSet(true, proto, o.pp6), one(accept)))
	}
	if p.Mode == netpolicy.ModeOpen {
		add(rule(t, ch, one(accept)))
	}
	final := rule(t, ch, deny)
	final.UserData = userdata.AppendString(nil, userdata.TypeComment, Fingerprint(p))
	add(final)

	if prepend {
		// Each goes to the head: the last first keeps their order.
		for i := len(rules) - 1; i >= 0; i-- {
			c.InsertRule(rules[i])
		}
	} else {
		for _, r := range rules {
			c.AddRule(r)
		}
	}

	if err := c.SetAddElements(s.links, []nftables.SetElement{{Key: ifname(a.Link)}}); err != nil {
		return err
	}
	// Adding the same link → chain element again is no change.
	if err := c.SetAddElements(s.egress, []nftables.SetElement{{Key: ifname(a.Link),
		VerdictData: &expr.Verdict{Kind: expr.VerdictJump, Chain: ch.Name}}}); err != nil {
		return err
	}
	written, err := m.hostNetsElements(c, false)
	if err != nil {
		return err
	}
	if err := c.Flush(); err != nil {
		return err
	}
	written()
	return nil
}

// dropPins deletes the pins of names policy p does not allow (all of
// them when the daemon does not know what they are for: a previous daemon
// made them). Each goes in a batch of its own: one the kernel already
// let expire must not undo the others.
func (m *Manager) dropPins(id string, o *sessionSets, p *netpolicy.Policy) {
	pins := m.pins[id]
	if pins == nil {
		_ = m.batch(func(c *nftables.Conn) error {
			for _, set := range []*nftables.Set{o.p4, o.p6, o.pp4, o.pp6} {
				c.FlushSet(set)
			}
			return nil
		})
		m.pins[id] = map[pinKey]pin{}
		return
	}
	for k, v := range pins {
		ports, ok := p.NamePorts(v.name)
		if ok && (ports == nil || (k.port != 0 && containsPort(ports, k.port))) {
			continue
		}
		delete(pins, k)
		set, key := o.pinSet(k)
		_ = m.batch(func(c *nftables.Conn) error { return c.SetDeleteElements(set, []nftables.SetElement{{Key: key}}) })
	}
}

// pinSet is the set of a pin, and its key there.
func (o *sessionSets) pinSet(k pinKey) (*nftables.Set, []byte) {
	switch {
	case k.port == 0 && k.addr.Is4():
		return o.p4, k.addr.AsSlice()
	case k.port == 0:
		return o.p6, k.addr.AsSlice()
	case k.addr.Is4():
		return o.pp4, addrPortKey(k.addr, k.port)
	default:
		return o.pp6, addrPortKey(k.addr, k.port)
	}
}

func containsPort(ps []uint16, p uint16) bool {
	for _, q := range ps {
		if q == p {
			return true
		}
	}
	return false
}

// mayCarry says session id's link may carry connections conntrack keeps:
// false when the policy this manager put in force is none, whose packets
// are all dropped before conntrack confirms an entry (and a change to
// none cut what the link carried before). The caller holds m.mu.
func (m *Manager) mayCarry(id string) bool {
	p, known := m.policies[id]
	return !known || p.Mode != netpolicy.ModeNone
}

// flushConntrack forgets the sandbox's connections, so that each is
// checked against the policy again at its next packet. The kernel walks
// its whole table for each address family, however few entries it holds.
func (m *Manager) flushConntrack(a *Attachment) error {
	for _, addr := range []netip.Addr{a.Addr, a.Addr6} {
		if !addr.IsValid() {
			continue
		}
		m.conntrackReads.Add(1)
		f := &netlink.ConntrackFilter{}
		if err := f.AddIP(netlink.ConntrackOrigSrcIP, net.IP(addr.AsSlice())); err != nil {
			return err
		}
		fam := netlink.FAMILY_V4
		if addr.Is6() {
			fam = netlink.FAMILY_V6
		}
		if _, err := netlink.ConntrackDeleteFilters(netlink.ConntrackTable, netlink.InetFamily(fam), f); err != nil {
			return fmt.Errorf("conntrack: %w", err)
		}
	}
	return nil
}

// Pin lets session id reach addr (on ports; nil: every port) for ttl:
// its DNS answered name with it.
func (m *Manager) Pin(id, name string, addr netip.Addr, ports []uint16, ttl time.Duration) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	o := m.sessionObjects(id)
	pins := m.pins[id]
	if pins == nil {
		pins = map[pinKey]pin{}
		m.pins[id] = pins
	}
	expires := time.Now().Add(ttl)
	keys := []pinKey{{addr: addr}}
	if ports != nil {
		keys = keys[:0]
		for _, p := range ports {
			keys = append(keys, pinKey{addr: addr, port: p})
		}
	}
	for _, k := range keys {
		set, key := o.pinSet(k)
		old, known := pins[k]
		// A pin with more than half its time left stands: renewing it
		// costs an nftables transaction, and answers come often.
		if known && time.Until(old.expires) > ttl/2 {
			continue
		}
		el := []nftables.SetElement{{Key: key, Timeout: ttl}}
		// A live element keeps its timeout when added again: it is
		// deleted and added in one batch.
		if known && time.Now().Before(old.expires) {
			if err := m.batch(func(c *nftables.Conn) error {
				if err := c.SetDeleteElements(set, el); err != nil {
					return err
				}
				return c.SetAddElements(set, el)
			}); err == nil {
				pins[k] = pin{name: name, expires: expires}
				continue
			}
		}
		if err := m.batch(func(c *nftables.Conn) error { return c.SetAddElements(set, el) }); err != nil {
			return fmt.Errorf("pin %s for session %s: %w", addr, id, err)
		}
		pins[k] = pin{name: name, expires: expires}
	}
	return nil
}

func (m *Manager) batch(f func(c *nftables.Conn) error) error {
	c, err := newConn()
	if err != nil {
		return err
	}
	if err := f(c); err != nil {
		return err
	}
	return c.Flush()
}

// Denied is how many packets session id's policy refused.
func (m *Manager) Denied(id string) (uint64, error) {
	c, err := newConn()
	if err != nil {
		return 0, err
	}
	obj, err := c.GetObject(m.sessionObjects(id).deny)
	if err != nil {
		return 0, err
	}
	if co, ok := obj.(*nftables.CounterObj); ok {
		return co.Packets, nil
	}
	return 0, errors.New("not a counter")
}

// Detach removes everything of session id's network; what is already
// gone is skipped, so it also cleans up after a failed Attach or a crash.
// a is its attachment, if known (nil for an orphan the daemon has no
// record of: its connections then wait for conntrack's timeouts).
func (m *Manager) Detach(ctx context.Context, id string, a *Attachment) error {
	known := a != nil
	if !known {
		a = m.Plan(id, 0)
	}
	m.mu.Lock()
	// Reading the conntrack table is most of a detach's cost (it walks
	// every bucket of the host's table, 4–5 ms of CPU here, empty or
	// not): a link that can carry no connection skips it.
	carried := m.mayCarry(id)
	delete(m.pins, id)
	delete(m.policies, id)
	delete(m.bareNone, id)
	m.mu.Unlock()
	var errs []error
	keep := func(err error) {
		if err != nil && !isNotFound(err) {
			errs = append(errs, err)
		}
	}
	o := m.sessionObjects(id)
	el := []nftables.SetElement{{Key: ifname(a.Link)}}
	steps := []func(c *nftables.Conn) error{
		func(c *nftables.Conn) error { return c.SetDeleteElements(m.sets.egress, el) },
		func(c *nftables.Conn) error { return c.SetDeleteElements(m.sets.links, el) },
		func(c *nftables.Conn) error { c.FlushChain(o.chain); c.DelChain(o.chain); return nil },
	}
	for _, set := range []*nftables.Set{o.p4, o.p6, o.pp4, o.pp6} {
		steps = append(steps, func(c *nftables.Conn) error { c.DelSet(set); return nil })
	}
	steps = append(steps, func(c *nftables.Conn) error { c.DeleteObject(o.deny); return nil })
	// All in one batch: each commit that deletes waits for an RCU grace
	// period (see setPolicy), and other sessions' batches wait behind it.
	// A batch fails whole if one object is gone already (a failed Attach,
	// a crash): then each goes in a batch of its own.
	if err := m.batch(func(c *nftables.Conn) error {
		for _, step := range steps {
			if err := step(c); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		for _, step := range steps {
			keep(m.batch(step))
		}
	}
	keep(m.removeLink(id))
	if known && carried {
		keep(m.flushConntrack(a))
	}
	return errors.Join(errs...)
}

// Leftovers are the sessions of which the host has some network: a link
// or a chain.
func (m *Manager) Leftovers() ([]string, error) {
	seen := map[string]bool{}
	ids, err := m.ownLinks()
	if err != nil {
		return nil, err
	}
	for _, id := range ids {
		seen[id] = true
	}
	c, err := newConn()
	if err != nil {
		return nil, err
	}
	chains, err := c.ListChainsOfTableFamily(nftables.TableFamilyINet)
	if err != nil {
		return nil, err
	}
	for _, ch := range chains {
		if ch.Table.Name != m.table.Name || len(ch.Name) < 3 || ch.Name[:2] != "s_" {
			continue
		}
		seen[ch.Name[2:]] = true
	}
	out := make([]string, 0, len(seen))
	for id := range seen {
		out = append(out, id)
	}
	return out, nil
}
