package network

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/google/nftables"

	"github.com/sandboxd/sandboxd/isolation/netpolicy"
)

// allowOf is an allow list of n entries of kind ("cidr": /32s, "port":
// ip:port, "name": host names, "mixed": all three and IPv6 ones in turn),
// the last of which lets the sandbox reach the outside's HTTP server.
func allowOf(kind string, n int, o *outside) []string {
	var out []string
	for i := 0; len(out) < n-1; i++ {
		// TEST-NET addresses: listed, never sent to.
		a := fmt.Sprintf("203.0.113.%d", i%256)
		if i >= 256 {
			a = fmt.Sprintf("198.51.100.%d", i%256)
		}
		k := kind
		if k == "mixed" {
			k = []string{"cidr", "port", "name", "port6", "cidr6"}[i%5]
		}
		switch k {
		case "cidr":
			out = append(out, a+"/32")
		case "port":
			out = append(out, a+":443")
		case "name":
			out = append(out, fmt.Sprintf("h%d.example.com", i))
		case "port6":
			out = append(out, fmt.Sprintf("[2001:db8::%x]:443", i))
		case "cidr6":
			out = append(out, fmt.Sprintf("2001:db8:1::%x/128", i))
		}
	}
	if kind == "port" {
		return append(out, o.addr.String()+":80")
	}
	return append(out, o.addr.String()+"/32")
}

// TestLargeAllowLists: every size of allow list up to the limit, of each
// kind, is put in force whole, at attach (a create) and by a policy
// change (a PATCH, from none and from another list), and is enforced.
func TestLargeAllowLists(t *testing.T) {
	m := testManager(t, true)
	o := newOutside(t)
	ctx := context.Background()
	sizes := []int{1, 100, 160}
	for n := 256; n <= netpolicy.MaxEntries; n *= 2 {
		sizes = append(sizes, n)
	}
	if sizes[len(sizes)-1] != netpolicy.MaxEntries {
		sizes = append(sizes, netpolicy.MaxEntries)
	}
	slot := uint32(0)
	for _, kind := range []string{"cidr", "port", "name", "mixed"} {
		for _, n := range sizes {
			id := fmt.Sprintf("%s%d", kind, n)
			slot++
			t.Run(id, func(t *testing.T) {
				ns := sandboxNS(t)
				p := mustPolicy(t, netpolicy.ModeAllowlist, allowOf(kind, n, o)...)
				check := func(how string) {
					t.Helper()
					if body, err := get(ns, o.addr); err != nil || body != "outside" {
						t.Fatalf("%s: the listed outside: %q %v", how, body, err)
					}
				}
				a, err := m.Attach(ctx, id, slot, ns, p)
				if err != nil {
					t.Fatalf("attach with %d entries: %v", n, err)
				}
				t.Cleanup(func() { _ = m.Detach(ctx, id, a) })
				check("create")
				if _, err := get(ns, o.addr6); err == nil {
					t.Fatal("reached an address the list does not name")
				}
				if err := m.SetPolicy(ctx, id, a, mustPolicy(t, netpolicy.ModeNone)); err != nil {
					t.Fatal(err)
				}
				if err := m.SetPolicy(ctx, id, a, p); err != nil {
					t.Fatalf("PATCH from none to %d entries: %v", n, err)
				}
				check("PATCH from none")
				if err := m.SetPolicy(ctx, id, a, mustPolicy(t, netpolicy.ModeAllowlist, allowOf("cidr", n, o)...)); err != nil {
					t.Fatalf("PATCH to another list of %d: %v", n, err)
				}
				if err := m.SetPolicy(ctx, id, a, p); err != nil {
					t.Fatalf("PATCH from a list to %d entries: %v", n, err)
				}
				check("PATCH from a list")
			})
		}
	}
}

// TestFailedChangeKeepsOldRules: a policy change that fails (here after
// the kernel took it: an answer lost) leaves the old policy in force,
// rules and all.
func TestFailedChangeKeepsOldRules(t *testing.T) {
	m := testManager(t, false)
	o := newOutside(t)
	ctx := context.Background()
	ns := sandboxNS(t)
	old := mustPolicy(t, netpolicy.ModeAllowlist, o.addr.String()+"/32")
	a, err := m.Attach(ctx, "s1", 1, ns, old)
	if err != nil {
		t.Fatal(err)
	}
	rules := func() int {
		t.Helper()
		c, _ := nftables.New()
		r, err := c.GetRules(m.table, m.sessionObjects("s1").chain)
		if err != nil {
			t.Fatal(err)
		}
		return len(r)
	}
	before := rules()
	for _, p := range []*netpolicy.Policy{mustPolicy(t, netpolicy.ModeNone), mustPolicy(t, netpolicy.ModeOpen),
		mustPolicy(t, netpolicy.ModeAllowlist, allowOf("port", netpolicy.MaxEntries, o)[1:]...)} {
		failCommitted = func() error { return errors.New("injected: the kernel's answer was lost") }
		err := m.SetPolicy(ctx, "s1", a, p)
		failCommitted = nil
		if err == nil {
			t.Fatalf("%s: the injected failure was not reported", p.Mode)
		}
		if n := rules(); n != before {
			t.Fatalf("%s: %d rules after a failed change, want the old %d", p.Mode, n, before)
		}
		if body, err := get(ns, o.addr); err != nil || body != "outside" {
			t.Fatalf("%s: the old policy is not in force after a failed change: %q %v", p.Mode, body, err)
		}
	}
	// The old policy is still known as the one in force: a change after
	// works.
	if err := m.SetPolicy(ctx, "s1", a, mustPolicy(t, netpolicy.ModeNone)); err != nil {
		t.Fatal(err)
	}
	if _, err := get(ns, o.addr); err == nil {
		t.Fatal("none reached the outside")
	}
}

// TestRebuildFromRecord: a new manager (a daemon started again after a
// crash) writes a running sandbox's chain and sets anew from the policy
// it is given (the record), whatever the kernel held: a policy the record
// does not have, and pins, go; connections made under it are cut.
func TestRebuildFromRecord(t *testing.T) {
	m := testManager(t, false)
	o := newOutside(t)
	ctx := context.Background()
	ns := sandboxNS(t)
	a, err := m.Attach(ctx, "s1", 1, ns, mustPolicy(t, netpolicy.ModeOpen))
	if err != nil {
		t.Fatal(err)
	}
	held, err := dialIn(ns, netip.AddrPortFrom(o.addr, 80))
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	if err := m.Pin("s1", "outside.test", o.addr, nil, time.Minute); err != nil {
		t.Fatal(err)
	}
	// The record says none (the crash came before it was written).
	m2, err := New(m.cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m2.Attach(ctx, "s1", 1, ns, mustPolicy(t, netpolicy.ModeNone)); err != nil {
		t.Fatal(err)
	}
	if _, err := get(ns, o.addr); err == nil {
		t.Fatal("the policy the record does not have is still in force")
	}
	if _, err := fetch(held); err == nil {
		t.Fatal("a connection made under the old policy carries on")
	}
	c, _ := nftables.New()
	els, err := c.GetSetElements(m.sessionObjects("s1").p4)
	if err != nil || len(els) != 0 {
		t.Fatalf("pins left: %v %v", els, err)
	}
	// The same policy as the kernel's: connections carry on.
	if err := m2.SetPolicy(ctx, "s1", a, mustPolicy(t, netpolicy.ModeOpen)); err != nil {
		t.Fatal(err)
	}
	kept, err := dialIn(ns, netip.AddrPortFrom(o.addr, 80))
	if err != nil {
		t.Fatal(err)
	}
	m3, err := New(m.cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m3.Attach(ctx, "s1", 1, ns, mustPolicy(t, netpolicy.ModeOpen)); err != nil {
		t.Fatal(err)
	}
	if body, err := fetch(kept); err != nil || body != "outside" {
		t.Fatalf("a connection the recorded policy allows was cut: %q %v", body, err)
	}
}
