package network

import (
	"fmt"
	"net/netip"
	"sync"

	"github.com/containerd/errdefs"

	"github.com/sandboxd/sandboxd/isolation/netpolicy"
)

// slotTable is what a Service knows of its sessions' networks: which
// slots are taken and by which session, and which session each sandbox
// address is (for the DNS, which answers by the asking address). Slots
// here count from 0, as the Manager's; the Service's callers see them
// from 1 (0: none), as a session's record keeps them.
type slotTable struct {
	mu    sync.Mutex
	slots map[uint32]bool
	next  uint32
	// of is each session's slot; a slot stays taken after its session
	// lets it go (drop) until its link is removed (free).
	of map[string]uint32
	by map[netip.Addr]netEntry
}

type netEntry struct {
	id     string
	policy *netpolicy.Policy
}

func newSlotTable() *slotTable {
	return &slotTable{slots: map[uint32]bool{}, of: map[string]uint32{}, by: map[netip.Addr]netEntry{}}
}

// slotOf is session id's slot, if it has one.
func (t *slotTable) slotOf(id string) (uint32, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	s, ok := t.of[id]
	return s, ok
}

// take gives session id a free slot of n (its own, if it has one).
func (t *slotTable) take(id string, n int) (uint32, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if s, ok := t.of[id]; ok {
		return s, nil
	}
	for i := 0; i < n; i++ {
		s := (t.next + uint32(i)) % uint32(n)
		if !t.slots[s] {
			t.slots[s] = true
			t.next = s + 1
			t.of[id] = s
			return s, nil
		}
	}
	return 0, errdefs.ErrResourceExhausted.WithMessage(fmt.Sprintf("all %d network slots of the subnet are taken: delete a session with a network first", n))
}

// reserve gives session id slot s, as its record says.
func (t *slotTable) reserve(id string, s uint32) {
	t.mu.Lock()
	t.slots[s] = true
	t.of[id] = s
	t.mu.Unlock()
}

// drop lets session id go of its slot, which stays taken until free.
func (t *slotTable) drop(id string) {
	t.mu.Lock()
	delete(t.of, id)
	t.mu.Unlock()
}

// free makes slot s free for another session.
func (t *slotTable) free(s uint32) {
	t.mu.Lock()
	delete(t.slots, s)
	t.mu.Unlock()
}

// ids are the sessions that have a slot.
func (t *slotTable) ids() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]string, 0, len(t.of))
	for id := range t.of {
		out = append(out, id)
	}
	return out
}

func (t *slotTable) set(a *Attachment, id string, p *netpolicy.Policy) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, addr := range []netip.Addr{a.Addr, a.Addr6} {
		if addr.IsValid() {
			t.by[addr] = netEntry{id: id, policy: p}
		}
	}
}

func (t *slotTable) forget(a *Attachment) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.by, a.Addr)
	delete(t.by, a.Addr6)
}

// lookup is which session, with which policy, sandbox address a is.
func (t *slotTable) lookup(a netip.Addr) (string, *netpolicy.Policy, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	e, ok := t.by[a.Unmap()]
	return e.id, e.policy, ok
}
