package daemon

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"sync"
	"time"

	"github.com/containerd/errdefs"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/daemon/config"
	sess "github.com/sandboxd/sandboxd/daemon/session"
	"github.com/sandboxd/sandboxd/internal/logging"
	"github.com/sandboxd/sandboxd/isolation/netpolicy"
	"github.com/sandboxd/sandboxd/isolation/network"
	"github.com/sandboxd/sandboxd/store"
)

// Network gives the sandboxes of sessions with a network policy their
// link and policy (isolation/network; a fake in the unit tests). The
// session's chain and pins live as long as the session; the link lives in
// its sandbox's network namespace and goes with it, and each new sandbox
// gets one.
type Network interface {
	Plan(id string, slot uint32) *network.Attachment
	// Attach gives a session's sandbox, whose network namespace ns is, its
	// network (or, for one that has it, the policy alone).
	Attach(ctx context.Context, id string, slot uint32, ns *os.File, p *netpolicy.Policy) (*network.Attachment, error)
	SetPolicy(ctx context.Context, id string, a *network.Attachment, p *netpolicy.Policy) error
	Detach(ctx context.Context, id string, a *network.Attachment) error
	Pin(id, name string, addr netip.Addr, ports []uint16, ttl time.Duration) error
	Denied(id string) (uint64, error)
	// Leftovers are the sessions of which the host has some network.
	Leftovers() ([]string, error)
	Slots() int
	// Where are the subnets and the nftables table, for /v1/info.
	Where() (subnet, subnet6, table string)
	// Remove deletes what the daemon has on the host for networks, for a
	// daemon that shuts down with no session left.
	Remove() error
}

// netTable is what the daemon knows of its sessions' networks: which
// slots are taken, and which session each sandbox address is (for the
// DNS, which answers by the asking address).
type netTable struct {
	mu    sync.Mutex
	slots map[uint32]bool
	next  uint32
	by    map[netip.Addr]netEntry
}

type netEntry struct {
	id     string
	policy *netpolicy.Policy
}

func newNetTable() *netTable {
	return &netTable{slots: map[uint32]bool{}, by: map[netip.Addr]netEntry{}}
}

// take reserves a free slot of n.
func (t *netTable) take(n int) (uint32, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for i := 0; i < n; i++ {
		s := (t.next + uint32(i)) % uint32(n)
		if !t.slots[s] {
			t.slots[s] = true
			t.next = s + 1
			return s, nil
		}
	}
	return 0, errdefs.ErrResourceExhausted.WithMessage(fmt.Sprintf("all %d network slots of the subnet are taken: delete a session with a network first", n))
}

func (t *netTable) reserve(s uint32) {
	t.mu.Lock()
	t.slots[s] = true
	t.mu.Unlock()
}

func (t *netTable) free(s uint32) {
	t.mu.Lock()
	delete(t.slots, s)
	t.mu.Unlock()
}

func (t *netTable) set(a *network.Attachment, id string, p *netpolicy.Policy) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, addr := range []netip.Addr{a.Addr, a.Addr6} {
		if addr.IsValid() {
			t.by[addr] = netEntry{id: id, policy: p}
		}
	}
}

func (t *netTable) forget(a *network.Attachment) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.by, a.Addr)
	delete(t.by, a.Addr6)
}

// lookup is which session, with which policy, sandbox address a is.
func (t *netTable) lookup(a netip.Addr) (string, *netpolicy.Policy, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	e, ok := t.by[a.Unmap()]
	return e.id, e.policy, ok
}

// checkNetwork checks a network mode, allow list and caps; a cap not
// given is def's.
func (d *Daemon) checkNetwork(mode string, allow []string, egressKbps, maxConns *int, def netpolicy.Policy) (*netpolicy.Policy, error) {
	p, err := netpolicy.Parse(mode, allow)
	if err != nil {
		return nil, api.Errorf(errdefs.ErrInvalidArgument, "%s", err.Error())
	}
	p.EgressKbps, p.MaxConnections = def.EgressKbps, def.MaxConnections
	for _, c := range []struct {
		name string
		v    *int
		to   *int
	}{{"egress_kbps", egressKbps, &p.EgressKbps}, {"max_connections", maxConns, &p.MaxConnections}} {
		if c.v == nil {
			continue
		}
		if *c.v < 0 {
			return nil, api.Errorf(errdefs.ErrInvalidArgument, "%s must be 0 (no cap) or more", c.name)
		}
		*c.to = *c.v
	}
	if p.Mode == netpolicy.ModeNone {
		p.EgressKbps, p.MaxConnections = 0, 0 // nothing to cap
	}
	if p.Mode != netpolicy.ModeNone && d.net == nil {
		why := d.netOff
		if why == "" {
			why = "networking is off on this host ([network] enabled = false)"
		}
		return nil, api.Errorf(errdefs.ErrUnavailable, "network %s is not available: %s", api.Quote(p.Mode), why)
	}
	return p, nil
}

// policyOf is a record's network policy (checked when it was made).
func policyOf(r *store.Record) *netpolicy.Policy {
	p, err := netpolicy.Parse(r.Network, r.Allow)
	if err != nil {
		// A record from a daemon that knew other entries: nothing it
		// allowed is allowed.
		p = &netpolicy.Policy{Mode: netpolicy.ModeAllowlist}
	}
	p.EgressKbps, p.MaxConnections = r.EgressKbps, r.MaxConnections
	return p
}

// defaultCaps are the caps of a session that asks for none.
func defaultCaps(c *config.Config) netpolicy.Policy {
	return netpolicy.Policy{EgressKbps: c.Network.EgressKbps, MaxConnections: c.Network.MaxConnections}
}

// ensureNetwork gives the session's new (or restored) sandbox its
// network, if its policy is not none. A restored sandbox that started with
// its link (networkAhead) gets its policy back whatever it is.
func (d *Daemon) ensureNetwork(ctx context.Context, s *session, sb Sandbox) error {
	rec := s.Snapshot()
	p := policyOf(&rec)
	if p.Mode == netpolicy.ModeNone && (rec.NetSlot == 0 || !d.linkAtStart(runtimeOf(rec.Runtime))) {
		return nil
	}
	return d.applyPolicy(ctx, s, sb, p)
}

// restoreNetwork writes the network of a sandbox a previous daemon left
// running anew from the session's record: that daemon may have died
// between a policy change's commit and its record, or during a package
// install (the index's opening, which lives no longer than its install),
// so nothing the kernel holds is trusted. A session with no slot has no
// network left (reconcileNetworks removed what a crash left of one); one
// of policy none whose runtime takes its link at no start has its link
// removed, as its next start would leave it.
func (d *Daemon) restoreNetwork(ctx context.Context, s *session, sb Sandbox) error {
	rec := s.Snapshot()
	if rec.NetSlot == 0 || d.net == nil {
		return nil
	}
	p := policyOf(&rec)
	if p.Mode == netpolicy.ModeNone && !d.linkAtStart(runtimeOf(rec.Runtime)) {
		return d.releaseNetwork(s, true)
	}
	return d.applyPolicy(ctx, s, sb, p)
}

// applyPolicy puts policy p in force for the session's running sandbox sb:
// its slot (taken at its first network, kept while the session lives), the
// link into the sandbox's namespace unless it has it, the chain, and the
// DNS's view of it.
func (d *Daemon) applyPolicy(ctx context.Context, s *session, sb Sandbox, p *netpolicy.Policy) error {
	rec := s.Snapshot()
	if rt := runtimeOf(rec.Runtime); rec.NetSlot == 0 && d.runtimes.info(rt).NetworkAtStart {
		// Only a daemon without networks starts one so (linkAtStart).
		return api.Errorf(errdefs.ErrConflict, "session %s runs on %s, which takes its network when its sandbox starts, and it started without one: stop the session, change its network, and start it again", rec.ID, rt)
	}
	ns, err := sb.NetNS()
	if err != nil {
		return err
	}
	defer ns.Close()
	return d.attach(ctx, s, ns, p)
}

// attach puts policy p in force for the session's sandbox whose network
// namespace ns is (see applyPolicy).
func (d *Daemon) attach(ctx context.Context, s *session, ns *os.File, p *netpolicy.Policy) error {
	rec := s.Snapshot()
	if d.net == nil {
		return api.Errorf(errdefs.ErrUnavailable, "session %s has network %s, which this daemon cannot give: %s", rec.ID, api.Quote(p.Mode), d.netOff)
	}
	if rt := runtimeOf(rec.Runtime); !d.runtimes.info(rt).Networks {
		return api.Errorf(errdefs.ErrInvalidArgument, "session %s runs on %s, which cannot have a network on this host (see sandboxctl info)", rec.ID, rt)
	}
	if rec.NetSlot == 0 {
		slot, err := d.netTable.take(d.net.Slots())
		if err != nil {
			return err
		}
		s.Update(func(r *store.Record) { r.NetSlot = slot + 1 })
		rec.NetSlot = slot + 1
	}
	a, err := d.net.Attach(ctx, rec.ID, rec.NetSlot-1, ns, p)
	if err != nil {
		return fmt.Errorf("session %s network: %w", rec.ID, err)
	}
	d.netTable.set(a, rec.ID, p)
	return nil
}

// linkAtStart says the sandboxes of runtime rt get their link before they
// start: gVisor's netstack takes the links of its namespace when runsc
// creates the sandbox and sees none added later, so each of its sandboxes
// starts with one, passing nothing for a session of network "none" (as a
// pooled runc sandbox's waits): a PATCH, or a package install, then opens
// it as it would add a runc sandbox's.
func (d *Daemon) linkAtStart(rt string) bool {
	info := d.runtimes.info(rt)
	return d.net != nil && info.NetworkAtStart && info.Networks
}

// networkAhead is the network namespace a session's sandbox starts in when
// its runtime takes its network at start (linkAtStart), with its link made
// and the session's policy in force; nil for other runtimes, which get
// theirs once started (ensureNetwork). The caller closes it once the
// sandbox has started (it then holds the namespace).
func (d *Daemon) networkAhead(ctx context.Context, s *session) (*os.File, error) {
	rec := s.Snapshot()
	if !d.linkAtStart(runtimeOf(rec.Runtime)) {
		return nil, nil
	}
	ns, err := d.rt.NewNetNS()
	if err != nil {
		return nil, fmt.Errorf("session %s network: %w", rec.ID, err)
	}
	if err := d.attach(ctx, s, ns, policyOf(&rec)); err != nil {
		ns.Close()
		return nil, err
	}
	return ns, nil
}

// releaseNetwork removes what the session's network has on the host
// (link, chain, pins, conntrack entries): at its delete, and with keepSlot
// at its stop, which keeps its addresses for its next start.
func (d *Daemon) releaseNetwork(s *session, keepSlot bool) error {
	rec := s.Snapshot()
	id, slot := rec.ID, rec.NetSlot
	if slot == 0 || d.net == nil {
		return nil
	}
	a := d.net.Plan(id, slot-1)
	d.netTable.forget(a)
	if err := d.net.Detach(d.daemonCtx(), id, a); err != nil {
		return fmt.Errorf("session %s network: %w", id, err)
	}
	if !keepSlot {
		d.metrics.ForgetDNS(id)
		d.netTable.free(slot - 1)
	}
	return nil
}

// dropLinkLater removes the link a pooled sandbox was given ahead, for a
// session of network "none" that claimed it: the session forgets its slot
// at once; the link, closed to everything meanwhile, goes in the
// background, off the claim's path.
func (d *Daemon) dropLinkLater(s *session) {
	var id string
	var slot uint32
	s.Update(func(r *store.Record) { id, slot, r.NetSlot = r.ID, r.NetSlot, 0 })
	if slot == 0 || d.net == nil {
		return
	}
	a := d.net.Plan(id, slot-1)
	d.netTable.forget(a)
	d.background.Add(1)
	go func() {
		defer d.background.Done()
		if err := d.net.Detach(d.daemonCtx(), id, a); err != nil {
			d.log.Warn("remove a claimed pooled sandbox's link", "session", id, "err", err)
		}
		d.netTable.free(slot - 1)
	}()
}

// reconcileNetworks takes the slots of the recorded sessions, indexes the
// addresses of the running ones for the DNS, and removes the networks no
// session owns, and those of sessions whose record gives them none (a
// crash between a change's commit and its record: the record wins) or no
// running sandbox (a stopped session gets its network at its start).
func (d *Daemon) reconcileNetworks(ctx context.Context) error {
	if d.net == nil {
		return nil
	}
	for _, s := range d.sessions.all() {
		rec := s.Snapshot()
		if rec.NetSlot == 0 {
			continue
		}
		d.netTable.reserve(rec.NetSlot - 1)
		d.netTable.set(d.net.Plan(rec.ID, rec.NetSlot-1), rec.ID, policyOf(&rec))
	}
	left, err := d.net.Leftovers()
	if err != nil {
		return fmt.Errorf("list networks: %w", err)
	}
	var errs []error
	for _, id := range left {
		if s, ok := d.sessions.get(id); ok {
			rec := s.Snapshot()
			if st := sess.Status(rec.Status); rec.NetSlot != 0 && (st == sess.Running || st == sess.Paused) {
				continue // restoreNetwork writes it anew
			}
		}
		if err := d.net.Detach(ctx, id, nil); err != nil {
			errs = append(errs, err)
			continue
		}
		d.log.Info("removed leftover network", "session", id)
	}
	if len(errs) > 0 {
		d.log.Warn("remove leftover networks", "err", errors.Join(errs...))
	}
	return nil
}

// allowList is a policy's allow entries as the caller wrote them.
func allowList(p *netpolicy.Policy) []string {
	var out []string
	for _, e := range p.Entries {
		out = append(out, e.Raw)
	}
	return out
}

// deniedCounts reads each networked session's refused packets, for
// /metrics.
func (d *Daemon) deniedCounts() map[string]uint64 {
	out := map[string]uint64{}
	if d.net == nil {
		return out
	}
	for _, s := range d.sessions.all() {
		rec := s.Snapshot()
		if rec.NetSlot == 0 {
			continue
		}
		if n, err := d.net.Denied(rec.ID); err == nil {
			out[rec.ID] = n
		}
	}
	return out
}

// SetNetwork changes a session's network policy, at once: its chain is
// rewritten and its connections checked again; a running sandbox that had
// no network gets its link. A stopped session gets it at its start.
func (d *Daemon) SetNetwork(ctx context.Context, id string, req *api.NetworkRequest) (*api.Session, error) {
	return d.lifecycle(ctx, id, opNetwork, func(s *session) error {
		rec := s.Snapshot()
		sb := s.Sandbox()
		caps := *policyOf(&rec)
		if caps.Mode == netpolicy.ModeNone {
			caps = defaultCaps(&d.cfg) // it had none to keep
		}
		p, err := d.checkNetwork(req.Network, req.Allow, req.EgressKbps, req.MaxConnections, caps)
		if err != nil {
			return err
		}
		s.Update(func(r *store.Record) {
			r.Network, r.Allow = p.Mode, allowList(p)
			r.EgressKbps, r.MaxConnections = p.EgressKbps, p.MaxConnections
		})
		// The policy as it was, if the new one cannot be had.
		putBack := func(r *store.Record) {
			r.Network, r.Allow = rec.Network, rec.Allow
			r.EgressKbps, r.MaxConnections = rec.EgressKbps, rec.MaxConnections
		}
		// A running sandbox gets the policy now (and its link, if it had
		// none); a stopped one at its start.
		if sb != nil && (rec.NetSlot != 0 || p.Mode != netpolicy.ModeNone) {
			if err := d.applyPolicy(ctx, s, sb, p); err != nil {
				s.Update(putBack)
				return err
			}
		}
		now := s.Snapshot()
		if err := d.store.PutSession(&now); err != nil {
			// The record keeps the old policy: so does the kernel.
			s.Update(putBack)
			if sb != nil && now.NetSlot != 0 {
				if err := d.applyPolicy(context.WithoutCancel(ctx), s, sb, policyOf(&rec)); err != nil {
					logging.From(ctx).Error("put the recorded network policy back", "session", rec.ID, "err", err)
				}
			}
			return recordErr(rec.ID, err)
		}
		rec = now
		logging.From(ctx).Info("session network changed", "session", rec.ID, "network", p.Mode, "allow", rec.Allow)
		return nil
	})
}
