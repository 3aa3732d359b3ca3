package daemon

import (
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"os"

	"github.com/containerd/errdefs"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/daemon/config"
	"github.com/sandboxd/sandboxd/daemon/metrics"
	sess "github.com/sandboxd/sandboxd/daemon/session"
	"github.com/sandboxd/sandboxd/internal/logging"
	"github.com/sandboxd/sandboxd/isolation/netpolicy"
	"github.com/sandboxd/sandboxd/isolation/network"
	"github.com/sandboxd/sandboxd/store"
)

// Network is the owner of the sessions' networks (network.Service; a
// fake in the unit tests): their slots, links, policies and the DNS that
// answers them. The session's chain and pins live as long as the session;
// the link lives in its sandbox's network namespace and goes with it, and
// each new sandbox gets one. Slots count from 1 (0: none), as a record
// keeps them.
type Network interface {
	// Attach puts policy p in force for session id's sandbox, whose
	// network namespace ns is (linking it unless it is); slot is the
	// session's, to record, even with an error (0: none).
	Attach(ctx context.Context, id string, ns *os.File, p *netpolicy.Policy) (slot uint32, err error)
	// Detach removes the session's network from the host; keepSlot keeps
	// its addresses for its next sandbox.
	Detach(ctx context.Context, id string, keepSlot bool) error
	// Drop takes the session's slot at once and returns what removes its
	// link (nil if it had none), to run off the caller's path.
	Drop(id string) func(context.Context) error
	// Reconcile takes the recorded sessions' slots and removes the
	// networks of the host that none of them keeps.
	Reconcile(ctx context.Context, recs []network.Recorded) error
	Denied(id string) (uint64, error)
	// Info is where the subnets and the nftables table are, for /v1/info.
	Info() network.Info
	// Close stops the DNS; remove deletes what the daemon has on the host
	// for networks, for a daemon that shuts down with no session left.
	Close(remove bool) error
}

var _ Network = (*network.Service)(nil)

// sessionNets is what a session's network needs of the daemon: the owner
// (nil when the host cannot give networks: off says why), the runtimes'
// facts, and the runtime's namespaces for sandboxes linked ahead.
type sessionNets struct {
	owner    Network
	off      string
	runtimes runtimeRules
	newNS    func() (*os.File, error)
}

// checkNetwork checks a network mode, allow list and caps; a cap not
// given is def's. off is why the host gives no networks ("" when it does).
func checkNetwork(mode string, allow []string, egressKbps, maxConns *int, def netpolicy.Policy, off string) (*netpolicy.Policy, error) {
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
	if p.Mode != netpolicy.ModeNone && off != "" {
		return nil, api.Errorf(errdefs.ErrUnavailable, "network %s is not available: %s", api.Quote(p.Mode), off)
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

// ensure gives the session's new (or restored) sandbox its network, if
// its policy is not none. A restored sandbox that started with its link
// (ahead) gets its policy back whatever it is.
func (n sessionNets) ensure(ctx context.Context, s *session, sb Sandbox) error {
	rec := s.Snapshot()
	p := policyOf(&rec)
	if p.Mode == netpolicy.ModeNone && (rec.NetSlot == 0 || !n.linkAtStart(runtimeOf(rec.Runtime))) {
		return nil
	}
	return n.apply(ctx, s, sb, p)
}

// restore writes the network of a sandbox a previous daemon left running
// anew from the session's record: that daemon may have died between a
// policy change's commit and its record, or during a package install (the
// index's opening, which lives no longer than its install), so nothing
// the kernel holds is trusted. A session with no slot has no network left
// (Reconcile removed what a crash left of one); one of policy none whose
// runtime takes its link at no start has its link removed, as its next
// start would leave it.
func (n sessionNets) restore(ctx context.Context, s *session, sb Sandbox) error {
	rec := s.Snapshot()
	if rec.NetSlot == 0 || n.owner == nil {
		return nil
	}
	p := policyOf(&rec)
	if p.Mode == netpolicy.ModeNone && !n.linkAtStart(runtimeOf(rec.Runtime)) {
		return n.release(ctx, s, true)
	}
	return n.apply(ctx, s, sb, p)
}

// apply puts policy p in force for the session's running sandbox sb: its
// slot (taken at its first network, kept while the session lives), the
// link into the sandbox's namespace unless it has it, the chain, and the
// DNS's view of it.
func (n sessionNets) apply(ctx context.Context, s *session, sb Sandbox, p *netpolicy.Policy) error {
	rec := s.Snapshot()
	if rt := runtimeOf(rec.Runtime); rec.NetSlot == 0 && n.runtimes.info(rt).NetworkAtStart {
		// Only a daemon without networks starts one so (linkAtStart).
		return api.Errorf(errdefs.ErrConflict, "session %s runs on %s, which takes its network when its sandbox starts, and it started without one: stop the session, change its network, and start it again", rec.ID, rt)
	}
	ns, err := sb.NetNS()
	if err != nil {
		return err
	}
	defer ns.Close()
	return n.attach(ctx, s, ns, p)
}

// attach puts policy p in force for the session's sandbox whose network
// namespace ns is (see apply), and records the session's slot.
func (n sessionNets) attach(ctx context.Context, s *session, ns *os.File, p *netpolicy.Policy) error {
	rec := s.Snapshot()
	if n.owner == nil {
		return api.Errorf(errdefs.ErrUnavailable, "session %s has network %s, which this daemon cannot give: %s", rec.ID, api.Quote(p.Mode), n.off)
	}
	if rt := runtimeOf(rec.Runtime); !n.runtimes.info(rt).Networks {
		return api.Errorf(errdefs.ErrInvalidArgument, "session %s runs on %s, which cannot have a network on this host (see sandboxctl info)", rec.ID, rt)
	}
	slot, err := n.owner.Attach(ctx, rec.ID, ns, p)
	if slot != 0 && slot != rec.NetSlot {
		s.Update(func(r *store.Record) { r.NetSlot = slot })
	}
	return err
}

// linkAtStart says the sandboxes of runtime rt get their link before they
// start: gVisor's netstack takes the links of its namespace when runsc
// creates the sandbox and sees none added later, so each of its sandboxes
// starts with one, passing nothing for a session of network "none" (as a
// pooled runc sandbox's waits): a PATCH, or a package install, then opens
// it as it would add a runc sandbox's.
func (n sessionNets) linkAtStart(rt string) bool {
	info := n.runtimes.info(rt)
	return n.owner != nil && info.NetworkAtStart && info.Networks
}

// ahead is the network namespace a session's sandbox starts in when its
// runtime takes its network at start (linkAtStart), with its link made
// and the session's policy in force; nil for other runtimes, which get
// theirs once started (ensure). The caller closes it once the sandbox has
// started (it then holds the namespace).
func (n sessionNets) ahead(ctx context.Context, s *session) (*os.File, error) {
	rec := s.Snapshot()
	if !n.linkAtStart(runtimeOf(rec.Runtime)) {
		return nil, nil
	}
	ns, err := n.newNS()
	if err != nil {
		return nil, fmt.Errorf("session %s network: %w", rec.ID, err)
	}
	if err := n.attach(ctx, s, ns, policyOf(&rec)); err != nil {
		ns.Close()
		return nil, err
	}
	return ns, nil
}

// release removes what the session's network has on the host (link,
// chain, pins, conntrack entries): at its delete, and with keepSlot at its
// stop, which keeps its addresses for its next start.
func (n sessionNets) release(ctx context.Context, s *session, keepSlot bool) error {
	if s.Snapshot().NetSlot == 0 || n.owner == nil {
		return nil
	}
	return n.owner.Detach(ctx, s.ID(), keepSlot)
}

// drop takes the link a pooled sandbox was given ahead from a session of
// network "none" that claimed it: the session forgets its slot at once;
// the returned remove (nil for none), which closes the link to everything
// meanwhile, is for the caller to run off the claim's path.
func (n sessionNets) drop(s *session) (remove func(context.Context) error) {
	var id string
	var slot uint32
	s.Update(func(r *store.Record) { id, slot, r.NetSlot = r.ID, r.NetSlot, 0 })
	if slot == 0 || n.owner == nil {
		return nil
	}
	return n.owner.Drop(id)
}

// netRecords are what the records of sessions say of their networks, for
// the owner's Reconcile.
func netRecords(all []*session) []network.Recorded {
	var out []network.Recorded
	for _, s := range all {
		rec := s.Snapshot()
		if rec.NetSlot == 0 {
			continue
		}
		st := sess.Status(rec.Status)
		out = append(out, network.Recorded{ID: rec.ID, Slot: rec.NetSlot, Policy: policyOf(&rec),
			Running: st == sess.Running || st == sess.Paused})
	}
	return out
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
func (n sessionNets) deniedCounts(all []*session) map[string]uint64 {
	out := map[string]uint64{}
	if n.owner == nil {
		return out
	}
	for _, s := range all {
		rec := s.Snapshot()
		if rec.NetSlot == 0 {
			continue
		}
		if c, err := n.owner.Denied(rec.ID); err == nil {
			out[rec.ID] = c
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
		p, err := checkNetwork(req.Network, req.Allow, req.EgressKbps, req.MaxConnections, caps, d.net.off)
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
			if err := d.net.apply(ctx, s, sb, p); err != nil {
				s.Update(putBack)
				return err
			}
		}
		now := s.Snapshot()
		if err := d.store.PutSession(&now); err != nil {
			// The record keeps the old policy: so does the kernel.
			s.Update(putBack)
			if sb != nil && now.NetSlot != 0 {
				if err := d.net.apply(context.WithoutCancel(ctx), s, sb, policyOf(&rec)); err != nil {
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

// netDeps are the daemon's network owner, or why it has none.
type netDeps struct {
	net Network
	off string
}

// openNetwork opens the owner of the sessions' networks. A host that
// cannot have them (a kernel without nftables, say) gets a daemon whose
// sessions can only have network "none", and a warning saying why.
func openNetwork(cfg config.Config, inst instance, m *metrics.Metrics, log *slog.Logger) netDeps {
	if !cfg.Network.Enabled {
		return netDeps{off: "networking is off on this host ([network] enabled = false)"}
	}
	var subnet6 netip.Prefix
	if cfg.Network.Subnet6 != "" {
		subnet6 = netip.MustParsePrefix(cfg.Network.Subnet6)
	}
	openNets, _ := cfg.Network.OpenHostPrefixes() // checked with the config
	svc, err := network.Open(network.ServiceConfig{
		Instance:         inst.id,
		DataDir:          cfg.DataDir,
		Subnet:           netip.MustParsePrefix(cfg.Network.Subnet),
		MoveSubnet:       !cfg.Network.SubnetSet(),
		Subnet6:          subnet6,
		LeaseDir:         cfg.Network.LeaseDir,
		OpenHostNetworks: openNets,
		DNSPort:          cfg.Network.DNSPort,
		DNSServers:       cfg.Network.DNSServers,
		DNSRate:          cfg.Network.DNSQueriesPerS,
		DNSBurst:         cfg.Network.DNSBurst,
		Refused:          m.DNSRefused,
		Logger:           log,
	})
	if err != nil {
		log.Warn("sessions can have network \"none\" only", "problem", err)
		return netDeps{off: err.Error()}
	}
	return netDeps{net: svc}
}
