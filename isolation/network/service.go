package network

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"

	"github.com/sandboxd/sandboxd/isolation/netpolicy"
)

// Service is the networks of one daemon's sessions, whole: the slots of
// its subnet and the session each is given to, the address of each
// sandbox for the DNS server, which it runs and whose pins it keeps, and
// the nftables table (Manager). The daemon records a session's slot and
// policy and tells the Service what to put in force; the Service is made
// by Open.
//
// Slots are numbered from 1 here (0: none), as a session's record keeps
// them.
type Service struct {
	mgr *Manager
	t   *slotTable
	log *slog.Logger
	// stopDNS lets go of the DNS server and its sockets.
	stopDNS func()
}

// Info is where the Service's networks are, for /v1/info.
type Info struct {
	// Subnet and Subnet6 are the sandboxes' blocks ("" for no IPv6),
	// Table the nftables table (inet family).
	Subnet, Subnet6, Table string
}

// Recorded is what a session's record says of its network, for
// Reconcile: a session with a slot.
type Recorded struct {
	ID     string
	Slot   uint32
	Policy *netpolicy.Policy
	// Running says its sandbox runs (or is paused): its network is kept
	// for the daemon to write anew with Attach.
	Running bool
}

// Attach puts policy p in force for session id's sandbox, whose network
// namespace ns is: its slot (taken at its first network, kept while the
// session lives), its link in ns unless it has it, its chain, and the
// DNS's view of it. A runtime that takes its link when its sandbox starts
// is attached ahead, in the namespace the sandbox will start in. slot is
// the session's, to record, even when the rest failed (0 if it has none).
func (s *Service) Attach(ctx context.Context, id string, ns *os.File, p *netpolicy.Policy) (slot uint32, _ error) {
	n, err := s.t.take(id, s.mgr.Slots())
	if err != nil {
		return 0, err
	}
	a, err := s.mgr.Attach(ctx, id, n, ns, p)
	if err != nil {
		return n + 1, fmt.Errorf("session %s network: %w", id, err)
	}
	s.t.set(a, id, p)
	return n + 1, nil
}

// Detach removes what session id's network has on the host (link, chain,
// pins, conntrack entries): at its delete, and with keepSlot at its stop,
// which keeps its addresses for its next start. A session with no slot
// has nothing to remove.
func (s *Service) Detach(ctx context.Context, id string, keepSlot bool) error {
	n, ok := s.t.slotOf(id)
	if !ok {
		return nil
	}
	a := s.mgr.Plan(id, n)
	s.t.forget(a)
	if err := s.mgr.Detach(ctx, id, a); err != nil {
		return fmt.Errorf("session %s network: %w", id, err)
	}
	if !keepSlot {
		s.t.drop(id)
		s.t.free(n)
	}
	return nil
}

// Drop takes session id's network from it at once: the session has no
// slot and the DNS no longer knows its addresses. It returns what removes
// the link from the host, for the caller to run off its path (nil when
// the session had no slot); the slot is free once that has run.
func (s *Service) Drop(id string) (remove func(context.Context) error) {
	n, ok := s.t.slotOf(id)
	if !ok {
		return nil
	}
	a := s.mgr.Plan(id, n)
	s.t.forget(a)
	s.t.drop(id)
	return func(ctx context.Context) error {
		defer s.t.free(n)
		return s.mgr.Detach(ctx, id, a)
	}
}

// Reconcile takes the slots of the recorded sessions, indexes their
// addresses for the DNS, and removes the networks no session owns, and
// those of sessions with no slot (a crash between a change's commit and
// its record: the record wins) or no running sandbox (a stopped session
// gets its network at its start).
func (s *Service) Reconcile(ctx context.Context, recs []Recorded) error {
	keep := map[string]bool{}
	for _, r := range recs {
		if r.Slot == 0 {
			continue
		}
		s.t.reserve(r.ID, r.Slot-1)
		s.t.set(s.mgr.Plan(r.ID, r.Slot-1), r.ID, r.Policy)
		keep[r.ID] = r.Running
	}
	left, err := s.mgr.Leftovers()
	if err != nil {
		return fmt.Errorf("list networks: %w", err)
	}
	var errs []error
	for _, id := range left {
		if keep[id] {
			continue // Attach writes it anew
		}
		if err := s.mgr.Detach(ctx, id, nil); err != nil {
			errs = append(errs, err)
			continue
		}
		s.log.Info("removed leftover network", "session", id)
	}
	if len(errs) > 0 {
		s.log.Warn("remove leftover networks", "err", errors.Join(errs...))
	}
	return nil
}

// Denied is how many packets session id's network refused.
func (s *Service) Denied(id string) (uint64, error) { return s.mgr.Denied(id) }

// Info is where the networks are.
func (s *Service) Info() Info {
	subnet, subnet6, table := s.mgr.Where()
	return Info{Subnet: subnet, Subnet6: subnet6, Table: table}
}

// Close stops the DNS server; the table and links stay for the
// sandboxes left running. With remove (a daemon that shuts down with no
// session left), the table goes too, and the subnet's lease.
func (s *Service) Close(remove bool) error {
	s.stopDNS()
	if remove {
		return s.mgr.Remove()
	}
	return nil
}
