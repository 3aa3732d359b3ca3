package daemon

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"slices"
	"sync"

	"github.com/containerd/errdefs"

	"github.com/sandboxd/sandboxd/isolation/netpolicy"
	"github.com/sandboxd/sandboxd/isolation/network"
)

// fakeNetwork is the host's sandbox networks in the unit tests: like
// fakeHost, it outlives a daemon. What a network.Service keeps in memory
// (slots, the DNS's index of addresses) starts anew with each daemon's
// Reconcile.
type fakeNetwork struct {
	mu       sync.Mutex
	attached map[string]*network.Attachment
	policy   map[string]*netpolicy.Policy
	pins     map[string][]netip.Addr
	// history is each session's policies in force, in order (mode, and
	// the allow entries).
	history map[string][]string
	// linkedNS is the namespace (file name) each session's link was
	// made in; attaches counts the links made for each.
	linkedNS map[string]string
	attaches map[string]int
	// failAttach, if set, makes every attach fail with it.
	failAttach error

	// The daemon's side: slots taken, each session's, the next to try,
	// and the sessions by address.
	taken map[uint32]bool
	slots map[string]uint32
	next  uint32
	by    map[netip.Addr]fakeEntry
}

type fakeEntry struct {
	id string
	p  *netpolicy.Policy
}

// fakeSlots is how many sandboxes the fake subnet holds.
const fakeSlots = 16

var _ Network = (*fakeNetwork)(nil)

func newFakeNetwork() *fakeNetwork {
	n := &fakeNetwork{attached: map[string]*network.Attachment{}, policy: map[string]*netpolicy.Policy{}, pins: map[string][]netip.Addr{}, linkedNS: map[string]string{}, history: map[string][]string{}, attaches: map[string]int{}}
	n.reset()
	return n
}

// reset forgets what a daemon's Service held in memory.
func (n *fakeNetwork) reset() {
	n.taken, n.slots, n.next, n.by = map[uint32]bool{}, map[string]uint32{}, 0, map[netip.Addr]fakeEntry{}
}

// plan is the attachment of session id in slot (from 0).
func plan(id string, slot uint32) *network.Attachment {
	b := [4]byte{10, 87, byte(slot >> 6), byte(slot<<2) + 2}
	gw := b
	gw[3]--
	return &network.Attachment{Slot: slot, Link: "sbx-" + id,
		Addr: netip.AddrFrom4(b), Gateway: netip.AddrFrom4(gw)}
}

// Attach links the sandbox whose namespace ns is (a file naming the
// fake sandbox): again for each new sandbox of the session.
func (n *fakeNetwork) Attach(ctx context.Context, id string, ns *os.File, p *netpolicy.Policy) (uint32, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	slot, ok := n.slots[id]
	if !ok {
		for i := range uint32(fakeSlots) {
			s := (n.next + i) % fakeSlots
			if !n.taken[s] {
				slot, ok = s, true
				n.taken[s], n.slots[id], n.next = true, s, s+1
				break
			}
		}
		if !ok {
			return 0, errdefs.ErrResourceExhausted.WithMessage("all network slots are taken")
		}
	}
	if n.failAttach != nil {
		return slot + 1, n.failAttach
	}
	if old := n.attached[id]; old != nil && old.Slot != slot {
		return slot + 1, fmt.Errorf("network of %s moved from slot %d to %d", id, old.Slot, slot)
	}
	if n.linkedNS[id] != ns.Name() {
		n.attaches[id]++
		n.linkedNS[id] = ns.Name()
	}
	a := plan(id, slot)
	n.attached[id], n.policy[id] = a, p
	n.history[id] = append(n.history[id], describe(p))
	n.by[a.Addr] = fakeEntry{id, p}
	return slot + 1, nil
}

// lookup is what the DNS knows of address a.
func (n *fakeNetwork) lookup(a netip.Addr) (string, *netpolicy.Policy, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	e, ok := n.by[a]
	return e.id, e.p, ok
}

func (n *fakeNetwork) Detach(ctx context.Context, id string, keepSlot bool) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	slot, ok := n.slots[id]
	if !ok {
		return nil
	}
	delete(n.by, plan(id, slot).Addr)
	n.remove(id)
	if !keepSlot {
		delete(n.slots, id)
		delete(n.taken, slot)
	}
	return nil
}

// remove deletes session id's network from the fake host.
func (n *fakeNetwork) remove(id string) {
	delete(n.attached, id)
	delete(n.linkedNS, id)
	delete(n.policy, id)
	delete(n.pins, id)
}

func (n *fakeNetwork) Drop(id string) func(context.Context) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	slot, ok := n.slots[id]
	if !ok {
		return nil
	}
	delete(n.by, plan(id, slot).Addr)
	delete(n.slots, id)
	return func(context.Context) error {
		n.mu.Lock()
		defer n.mu.Unlock()
		n.remove(id)
		delete(n.taken, slot)
		return nil
	}
}

// Reconcile starts the daemon's side anew from the records, as a new
// Service does, and removes the fake host's networks none keeps.
func (n *fakeNetwork) Reconcile(ctx context.Context, recs []network.Recorded) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.reset()
	keep := map[string]bool{}
	for _, r := range recs {
		n.taken[r.Slot-1], n.slots[r.ID] = true, r.Slot-1
		n.by[plan(r.ID, r.Slot-1).Addr] = fakeEntry{r.ID, r.Policy}
		keep[r.ID] = r.Running
	}
	for id := range n.attached {
		if !keep[id] {
			n.remove(id)
		}
	}
	return nil
}

func (n *fakeNetwork) Denied(id string) (uint64, error) { return 0, nil }

func (n *fakeNetwork) Info() network.Info {
	return network.Info{Subnet: "10.87.0.0/16", Table: "sandboxd-test"}
}

// Close forgets what the daemon's Service held.
func (n *fakeNetwork) Close(remove bool) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.reset()
	return nil
}

func describe(p *netpolicy.Policy) string {
	d := p.Mode
	for _, e := range p.Entries {
		d += " " + e.Raw
	}
	return d
}

// mode is session id's policy mode on the fake host ("" without a network).
func (n *fakeNetwork) mode(id string) string {
	n.mu.Lock()
	defer n.mu.Unlock()
	if p := n.policy[id]; p != nil {
		return p.Mode
	}
	return ""
}

// state is what the fake host has of session id's network: links made, the
// namespace of its link, its attachment.
func (n *fakeNetwork) state(id string) (attaches int, linkedNS string, a *network.Attachment) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.attaches[id], n.linkedNS[id], n.attached[id]
}

// policyOf is session id's policy on the fake host (nil without a network).
func (n *fakeNetwork) policyOf(id string) *netpolicy.Policy {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.policy[id]
}

// historyOf is session id's policies in force, in order.
func (n *fakeNetwork) historyOf(id string) []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return slices.Clone(n.history[id])
}
