package network

import (
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/containerd/errdefs"

	"github.com/sandboxd/sandboxd/isolation/netpolicy"
)

// These tests need no root: the slot table and the address index are
// memory alone.

// TestSlotTake: a session keeps its slot; new ones go round the subnet,
// and a full subnet says so.
func TestSlotTake(t *testing.T) {
	tb := newSlotTable()
	a, err := tb.take("a", 2)
	if err != nil || a != 0 {
		t.Fatalf("first slot %d %v", a, err)
	}
	if again, _ := tb.take("a", 2); again != a {
		t.Fatalf("a session's slot moved from %d to %d", a, again)
	}
	if b, err := tb.take("b", 2); err != nil || b != 1 {
		t.Fatalf("second slot %d %v", b, err)
	}
	if _, err := tb.take("c", 2); !errdefs.IsResourceExhausted(err) {
		t.Fatalf("a full subnet: %v", err)
	}
	// A dropped slot is taken until it is free.
	tb.drop("a")
	if _, ok := tb.slotOf("a"); ok {
		t.Fatal("a dropped session keeps its slot")
	}
	if _, err := tb.take("c", 2); err == nil {
		t.Fatal("a slot not yet free was given again")
	}
	tb.free(0)
	if c, err := tb.take("c", 2); err != nil || c != 0 {
		t.Fatalf("freed slot: %d %v", c, err)
	}
	got := tb.ids()
	slices.Sort(got)
	if !slices.Equal(got, []string{"b", "c"}) {
		t.Fatalf("sessions with slots: %q", got)
	}
}

// TestSlotReserve: a recorded slot is its session's, and no other's.
func TestSlotReserve(t *testing.T) {
	tb := newSlotTable()
	tb.reserve("old", 0)
	if s, ok := tb.slotOf("old"); !ok || s != 0 {
		t.Fatalf("reserved slot %d %v", s, ok)
	}
	if s, err := tb.take("new", 4); err != nil || s == 0 {
		t.Fatalf("a new session got slot %d (%v)", s, err)
	}
}

// TestAddressIndex: the DNS finds a sandbox by either address, IPv4 also
// as an IPv4-mapped IPv6 address, until it is forgotten.
func TestAddressIndex(t *testing.T) {
	m := &Manager{cfg: Config{Instance: "t", Subnet: netip.MustParsePrefix("10.87.0.0/16"), Subnet6: netip.MustParsePrefix("fd87::/96")}}
	tb := newSlotTable()
	a := m.Plan("s1", 3)
	p := &netpolicy.Policy{Mode: netpolicy.ModeOpen}
	tb.set(a, "s1", p)
	for _, addr := range []netip.Addr{a.Addr, a.Addr6, netip.AddrFrom16(a.Addr.As16())} {
		if id, got, ok := tb.lookup(addr); !ok || id != "s1" || got != p {
			t.Fatalf("lookup %s: %q %v %v", addr, id, got, ok)
		}
	}
	if _, _, ok := tb.lookup(a.Gateway); ok {
		t.Fatal("the gateway is a session")
	}
	tb.forget(a)
	if _, _, ok := tb.lookup(a.Addr); ok {
		t.Fatal("a forgotten address is still known")
	}
}

func TestHostResolvers(t *testing.T) {
	path := filepath.Join(t.TempDir(), "resolv.conf")
	conf := "# comment\nnameserver 192.0.2.53\nnameserver fe80::1%eth0\nnameserver bogus\nsearch example.com\n"
	if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	got := hostResolvers(path)
	if want := []string{"192.0.2.53:53", "[fe80::1]:53"}; !slices.Equal(got, want) {
		t.Fatalf("resolvers %q, want %q", got, want)
	}
	if hostResolvers(filepath.Join(t.TempDir(), "none")) != nil {
		t.Fatal("resolvers from no file")
	}
}
