package daemon

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/sandboxd/sandboxd/isolation/netpolicy"
	"github.com/sandboxd/sandboxd/isolation/network"
)

// fakeNetwork is the host's sandbox networks in the unit tests: like
// fakeHost, it outlives a daemon.
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
}

var _ Network = (*fakeNetwork)(nil)

func newFakeNetwork() *fakeNetwork {
	return &fakeNetwork{attached: map[string]*network.Attachment{}, policy: map[string]*netpolicy.Policy{}, pins: map[string][]netip.Addr{}, linkedNS: map[string]string{}, history: map[string][]string{}, attaches: map[string]int{}}
}

func (n *fakeNetwork) Plan(id string, slot uint32) *network.Attachment {
	b := [4]byte{10, 87, byte(slot >> 6), byte(slot<<2) + 2}
	gw := b
	gw[3]--
	return &network.Attachment{Slot: slot, Link: "sbx-" + id,
		Addr: netip.AddrFrom4(b), Gateway: netip.AddrFrom4(gw)}
}

// Attach links the sandbox whose namespace ns is (a file naming the
// fake sandbox): again for each new sandbox of the session.
func (n *fakeNetwork) Attach(ctx context.Context, id string, slot uint32, ns *os.File, p *netpolicy.Policy) (*network.Attachment, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.failAttach != nil {
		return nil, n.failAttach
	}
	if old := n.attached[id]; old != nil && old.Slot != slot {
		return nil, fmt.Errorf("network of %s moved from slot %d to %d", id, old.Slot, slot)
	}
	if n.linkedNS[id] != ns.Name() {
		n.attaches[id]++
		n.linkedNS[id] = ns.Name()
	}
	a := n.Plan(id, slot)
	n.attached[id], n.policy[id] = a, p
	n.history[id] = append(n.history[id], describe(p))
	return a, nil
}

func (n *fakeNetwork) SetPolicy(ctx context.Context, id string, a *network.Attachment, p *netpolicy.Policy) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.attached[id] == nil {
		return fmt.Errorf("no network for %s", id)
	}
	n.policy[id] = p
	n.history[id] = append(n.history[id], describe(p))
	return nil
}

func describe(p *netpolicy.Policy) string {
	d := p.Mode
	for _, e := range p.Entries {
		d += " " + e.Raw
	}
	return d
}

func (n *fakeNetwork) Detach(ctx context.Context, id string, a *network.Attachment) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	delete(n.attached, id)
	delete(n.linkedNS, id)
	delete(n.policy, id)
	delete(n.pins, id)
	return nil
}

func (n *fakeNetwork) Pin(id, name string, addr netip.Addr, ports []uint16, ttl time.Duration) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.pins[id] = append(n.pins[id], addr)
	return nil
}

func (n *fakeNetwork) Denied(id string) (uint64, error) { return 0, nil }

func (n *fakeNetwork) Leftovers() ([]string, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	var ids []string
	for id := range n.attached {
		ids = append(ids, id)
	}
	return ids, nil
}

func (n *fakeNetwork) Slots() int { return 16 }

// mode is session id's policy mode on the fake host ("" without a network).
func (n *fakeNetwork) mode(id string) string {
	n.mu.Lock()
	defer n.mu.Unlock()
	if p := n.policy[id]; p != nil {
		return p.Mode
	}
	return ""
}

func (n *fakeNetwork) Remove() error { return nil }

func (n *fakeNetwork) Where() (string, string, string) { return "10.87.0.0/16", "", "sandboxd-test" }

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
