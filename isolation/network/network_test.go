package network

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/nftables"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"

	"github.com/sandboxd/sandboxd/isolation/idmap"
	"github.com/sandboxd/sandboxd/isolation/netpolicy"
)

// These tests build real networks: root, a manager of a daemon instance
// of their own (its table, links and leased subnet), and an "outside"
// namespace on 198.18.0.0/15 standing in for the internet. Nothing is
// sent anywhere else.

func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
}

func randomID() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// testManager is a manager of a fresh instance; everything of it goes at
// the end of the test.
// outsideNetworks are the ranges newOutside's links are made in.
var outsideNetworks = []netip.Prefix{netip.MustParsePrefix("198.18.0.0/15"), netip.MustParsePrefix("2001:2::/48")}

func testManager(t *testing.T, v6 bool) *Manager {
	t.Helper()
	return testManagerDNS(t, v6, 5353)
}

// testManagerDNS is testManager with the DNS server on dnsPort.
func testManagerDNS(t *testing.T, v6 bool, dnsPort uint16) *Manager {
	t.Helper()
	needRoot(t)
	inst := "t" + randomID()
	dataDir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dataDir, idmap.InstanceFile), []byte(inst), 0o644); err != nil {
		t.Fatal(err)
	}
	leases := "/run/sandboxd-subnets"
	subnet, err := SubnetLease{Dir: leases, Instance: inst, DataDir: dataDir, Want: netip.MustParsePrefix("10.87.0.0/16"), Move: true}.Lease()
	if err != nil {
		t.Fatal(err)
	}
	// newOutside's links are networks of the host's: open reaches them
	// as the operator of a host may let it reach one.
	cfg := Config{Instance: inst, Subnet: subnet, DNSPort: dnsPort, OpenHostNetworks: outsideNetworks}
	if v6 {
		b := subnet.Addr().As4()
		cfg.Subnet6 = netip.MustParsePrefix(fmt.Sprintf("fd5b:d0c:%x::/96", b[1]))
	}
	m, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ids, _ := m.Leftovers()
		for _, id := range ids {
			if err := m.Detach(context.Background(), id, nil); err != nil {
				t.Errorf("detach %s: %v", id, err)
			}
		}
		if err := RemoveTable(inst); err != nil {
			t.Error(err)
		}
		_ = ReleaseSubnet(leases, inst)
	})
	return m
}

// outside is a namespace standing in for the internet: a veth from the
// host, an HTTP server on its address.
type outside struct {
	addr, addr6 netip.Addr
	// gw is the host's address on the link to it; ns its namespace.
	gw netip.Addr
	ns *os.File
}

func newOutside(t *testing.T) *outside {
	t.Helper()
	n := 100 + int(time.Now().UnixNano()%100)
	for ; ; n++ {
		if n > 250 {
			t.Fatal("no free outside index")
		}
		if _, err := netlink.LinkByName(fmt.Sprintf("nto%d", n)); err != nil {
			break
		}
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	host, err := netns.Get()
	if err != nil {
		t.Fatal(err)
	}
	defer host.Close()
	ns, err := netns.New()
	if err != nil {
		t.Fatal(err)
	}
	nsFile := os.NewFile(uintptr(ns), "netns")
	t.Cleanup(func() { nsFile.Close() })
	if err := netns.Set(host); err != nil {
		t.Fatal(err)
	}
	name := fmt.Sprintf("nto%d", n)
	if err := netlink.LinkAdd(&netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: name}, PeerName: "eth0", PeerNamespace: netlink.NsFd(int(ns))}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if l, err := netlink.LinkByName(name); err == nil {
			_ = netlink.LinkDel(l)
		}
	})
	o := &outside{
		addr:  netip.MustParseAddr(fmt.Sprintf("198.18.%d.2", n)),
		addr6: netip.MustParseAddr(fmt.Sprintf("2001:2:0:%x::2", n)),
	}
	gw, gw6 := netip.MustParseAddr(fmt.Sprintf("198.18.%d.1", n)), netip.MustParseAddr(fmt.Sprintf("2001:2:0:%x::1", n))
	o.gw, o.ns = gw, nsFile
	hl, _ := netlink.LinkByName(name)
	if err := addAddrs(&netlink.Handle{}, hl, gw, gw6); err != nil {
		t.Fatal(err)
	}
	if err := netlink.LinkSetUp(hl); err != nil {
		t.Fatal(err)
	}
	h, err := netlink.NewHandleAt(ns)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	eth, _ := h.LinkByName("eth0")
	lo, _ := h.LinkByName("lo")
	_ = h.LinkSetUp(lo)
	if err := addAddrs(h, eth, o.addr, o.addr6); err != nil {
		t.Fatal(err)
	}
	if err := h.LinkSetUp(eth); err != nil {
		t.Fatal(err)
	}
	// The server listens inside; the socket keeps its namespace.
	if err := netns.Set(ns); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", ":80")
	_ = netns.Set(host)
	if err != nil {
		t.Fatal(err)
	}
	// A plain answer to anything (no net/http in package isolation).
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_ = c.SetDeadline(time.Now().Add(5 * time.Second))
				_, _ = c.Read(make([]byte, 1024))
				io.WriteString(c, "HTTP/1.0 200 OK\r\nContent-Length: 7\r\n\r\noutside")
			}()
		}
	}()
	t.Cleanup(func() { l.Close() })
	return o
}

// sandboxNS is a network namespace standing in for a sandbox's.
func sandboxNS(t *testing.T) *os.File {
	t.Helper()
	ch := make(chan netns.NsHandle, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread dies in the new namespace
		ns, err := netns.New()
		if err != nil {
			t.Error(err)
		}
		ch <- ns
	}()
	ns := <-ch
	f := os.NewFile(uintptr(ns), "netns")
	t.Cleanup(func() { f.Close() })
	return f
}

// dialIn dials TCP to ap from inside namespace f.
func dialIn(f *os.File, ap netip.AddrPort) (net.Conn, error) {
	ns := netns.NsHandle(f.Fd())
	type result struct {
		c   net.Conn
		err error
	}
	ch := make(chan result, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread dies with the goroutine
		if err := netns.Set(ns); err != nil {
			ch <- result{err: err}
			return
		}
		c, err := net.DialTimeout("tcp", ap.String(), 2*time.Second)
		ch <- result{c, err}
	}()
	r := <-ch
	return r.c, r.err
}

// get fetches http://addr/ from inside namespace f.
func get(f *os.File, addr netip.Addr) (string, error) {
	c, err := dialIn(f, netip.AddrPortFrom(addr, 80))
	if err != nil {
		return "", err
	}
	return fetch(c)
}

// fetch sends GET / on c and returns the answer's body.
func fetch(c net.Conn) (string, error) {
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(3 * time.Second))
	fmt.Fprintf(c, "GET / HTTP/1.0\r\nHost: x\r\n\r\n")
	b, err := io.ReadAll(c)
	if err != nil {
		return "", err
	}
	_, body, _ := strings.Cut(string(b), "\r\n\r\n")
	return body, nil
}

func mustPolicy(t *testing.T, mode string, allow ...string) *netpolicy.Policy {
	t.Helper()
	p, err := netpolicy.Parse(mode, allow)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestAttachOpenAndNone(t *testing.T) {
	m := testManager(t, true)
	o := newOutside(t)
	ctx := context.Background()
	ns1, ns2 := sandboxNS(t), sandboxNS(t)
	a, err := m.Attach(ctx, "s1", 1, ns1, mustPolicy(t, netpolicy.ModeOpen))
	if err != nil {
		t.Fatal(err)
	}
	if !m.linked("s1", netns.NsHandle(ns1.Fd()), a) {
		t.Fatal("not linked")
	}
	for _, addr := range []netip.Addr{o.addr, o.addr6} {
		if body, err := get(ns1, addr); err != nil || body != "outside" {
			t.Fatalf("open: GET %s: %q %v", addr, body, err)
		}
	}
	// The host itself is not reachable: its gateway address, its side
	// of the outside link.
	for _, addr := range []netip.Addr{a.Gateway, netip.MustParseAddr(strings.TrimSuffix(o.addr.String(), "2") + "1")} {
		if _, err := get(ns1, addr); err == nil {
			t.Fatalf("open reached the host at %s", addr)
		}
	}
	// Another sandbox is not reachable.
	b, err := m.Attach(ctx, "s2", 2, ns2, mustPolicy(t, netpolicy.ModeOpen))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := get(ns1, b.Addr); err == nil {
		t.Fatal("a sandbox reached another")
	}

	// Allowlist with only a CIDR of the outside's v4 address.
	if err := m.SetPolicy(ctx, "s1", a, mustPolicy(t, netpolicy.ModeAllowlist, o.addr.String()+"/32")); err != nil {
		t.Fatal(err)
	}
	if body, err := get(ns1, o.addr); err != nil || body != "outside" {
		t.Fatalf("allowlisted CIDR: %q %v", body, err)
	}
	if _, err := get(ns1, o.addr6); err == nil {
		t.Fatal("allowlist reached an address it does not list")
	}
	// A pin opens the v6 address.
	if err := m.Pin("s1", "outside.test", o.addr6, nil, time.Minute); err != nil {
		t.Fatal(err)
	}
	if body, err := get(ns1, o.addr6); err != nil || body != "outside" {
		t.Fatalf("pinned address: %q %v", body, err)
	}
	if n, err := m.Denied("s1"); err != nil || n == 0 {
		t.Fatalf("denied counter %d %v", n, err)
	}
	// none: nothing.
	if err := m.SetPolicy(ctx, "s1", a, mustPolicy(t, netpolicy.ModeNone)); err != nil {
		t.Fatal(err)
	}
	if _, err := get(ns1, o.addr); err == nil {
		t.Fatal("none reached the outside")
	}

	if err := m.Detach(ctx, "s1", a); err != nil {
		t.Fatal(err)
	}
	if _, err := netlink.LinkByName(a.Link); err == nil {
		t.Fatal("link left")
	}
	ids, err := m.Leftovers()
	if err != nil || len(ids) != 1 || ids[0] != "s2" {
		t.Fatalf("leftovers %v %v", ids, err)
	}
	c, _ := nftables.New()
	if _, err := c.ListChain(m.table, "s_s1"); err == nil {
		t.Fatal("chain left")
	}
}

// TestPolicyAheadOfNone is a pooled sandbox's link: made with policy
// none, then given the session's policy at claim (its rules put ahead of
// none's, no rewrite), then changed again (written whole: no dead rules
// stay behind).
func TestPolicyAheadOfNone(t *testing.T) {
	m := testManager(t, true)
	o := newOutside(t)
	ctx := context.Background()
	ns := sandboxNS(t)
	rules := func() int {
		t.Helper()
		c, _ := nftables.New()
		r, err := c.GetRules(m.table, m.sessionObjects("s1").chain)
		if err != nil {
			t.Fatal(err)
		}
		return len(r)
	}
	a, err := m.Attach(ctx, "s1", 1, ns, mustPolicy(t, netpolicy.ModeNone))
	if err != nil {
		t.Fatal(err)
	}
	none := rules()
	if _, err := get(ns, o.addr); err == nil {
		t.Fatal("none reached the outside")
	}
	if _, err := m.Attach(ctx, "s1", 1, ns, mustPolicy(t, netpolicy.ModeOpen)); err != nil {
		t.Fatal(err)
	}
	for _, addr := range []netip.Addr{o.addr, o.addr6} {
		if body, err := get(ns, addr); err != nil || body != "outside" {
			t.Fatalf("open after none: GET %s: %q %v", addr, body, err)
		}
	}
	if _, err := get(ns, a.Gateway); err == nil {
		t.Fatal("open after none reached the host")
	}
	open := rules() - none
	if open <= 0 {
		t.Fatalf("%d rules after none's %d", open+none, none)
	}
	if err := m.SetPolicy(ctx, "s1", a, mustPolicy(t, netpolicy.ModeAllowlist, o.addr6.String()+"/128")); err != nil {
		t.Fatal(err)
	}
	if _, err := get(ns, o.addr); err == nil {
		t.Fatal("allowlist reached an address it does not list")
	}
	if body, err := get(ns, o.addr6); err != nil || body != "outside" {
		t.Fatalf("allowlisted CIDR: %q %v", body, err)
	}
	// An allowlist of one CIDR has open's rules, an accept of the CIDR in
	// place of the accept of everything.
	if n := rules(); n != open {
		t.Fatalf("%d rules after a whole write of an allowlist of one CIDR, want %d", n, open)
	}
	// Back to none and open again: ahead once more, never piling up.
	for i := 0; i < 2; i++ {
		if err := m.SetPolicy(ctx, "s1", a, mustPolicy(t, netpolicy.ModeNone)); err != nil {
			t.Fatal(err)
		}
		if err := m.SetPolicy(ctx, "s1", a, mustPolicy(t, netpolicy.ModeOpen)); err != nil {
			t.Fatal(err)
		}
		if n := rules(); n != none+open {
			t.Fatalf("round %d: %d rules, want %d", i, n, none+open)
		}
	}
}

// TestDetachForgetsConnections: a detach forgets the connections of a
// link that carried some (its address goes to another sandbox later,
// whose packets must not match them), and does not read the conntrack
// table for a link whose policy was none throughout: its packets are
// dropped before conntrack keeps them, so there is nothing to forget.
func TestDetachForgetsConnections(t *testing.T) {
	m := testManager(t, false)
	o := newOutside(t)
	ctx := context.Background()
	entries := func(addr netip.Addr) int {
		t.Helper()
		flows, err := netlink.ConntrackTableList(netlink.ConntrackTable, netlink.FAMILY_V4)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, f := range flows {
			if f.Forward.SrcIP.Equal(net.IP(addr.AsSlice())) {
				n++
			}
		}
		return n
	}

	ns := sandboxNS(t)
	a, err := m.Attach(ctx, "s1", 1, ns, mustPolicy(t, netpolicy.ModeOpen))
	if err != nil {
		t.Fatal(err)
	}
	if body, err := get(ns, o.addr); err != nil || body != "outside" {
		t.Fatalf("open: %q %v", body, err)
	}
	if entries(a.Addr) == 0 {
		t.Fatal("an open link's connection has no conntrack entry")
	}
	reads := m.conntrackReads.Load()
	if err := m.Detach(ctx, "s1", a); err != nil {
		t.Fatal(err)
	}
	if n := entries(a.Addr); n != 0 {
		t.Fatalf("%d conntrack entries of a detached link left", n)
	}
	if n := m.conntrackReads.Load() - reads; n != 1 {
		t.Fatalf("an open link's detach read the conntrack table %d times, want 1 (IPv4 only)", n)
	}

	ns2 := sandboxNS(t)
	b, err := m.Attach(ctx, "s2", 2, ns2, mustPolicy(t, netpolicy.ModeNone))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := get(ns2, o.addr); err == nil {
		t.Fatal("none reached the outside")
	}
	if _, err := get(ns2, b.Gateway); err == nil {
		t.Fatal("none reached the host")
	}
	if n := entries(b.Addr); n != 0 {
		t.Fatalf("a none link's packets left %d conntrack entries", n)
	}
	reads = m.conntrackReads.Load()
	if err := m.Detach(ctx, "s2", b); err != nil {
		t.Fatal(err)
	}
	if n := m.conntrackReads.Load() - reads; n != 0 {
		t.Fatalf("a none link's detach read the conntrack table %d times", n)
	}
}
