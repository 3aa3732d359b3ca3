package integration

import (
	"archive/zip"
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/vishvananda/netlink"

	"github.com/sandboxd/sandboxd/isolation/network"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// fakeNet is a fake internet for network tests: a network namespace the
// test makes, joined to the host by a veth pair, with a DNS server and
// HTTP and TCP echo servers on addresses of 198.18.0.0/15 and 2001:2::/48
// (the benchmarking ranges, which the contract does not block), and
// stand-ins for addresses that must stay unreachable (metadata on
// 169.254.77.n, a private address 10.255.n.1), routed from the host into
// the namespace for the fixture's life. So a test of a block that fails
// sends nothing off the host.
type fakeNet struct {
	n  int
	ns netns.NsHandle
	// DNS and DNS6 are the DNS server; Web, Other and Web6 HTTP servers on
	// port 80 (GET / answers "hello from ADDR"), with a TCP echo on port 7;
	// Web has a discard server on port 9 (Received).
	DNS, DNS6           netip.AddrPort
	Web, Other, Web6    netip.Addr
	Metadata, Private   netip.Addr
	HostAddr, HostAddr6 netip.Addr

	link    string
	routes  []*netlink.Route
	lock    *os.File
	closers []io.Closer

	mu       sync.Mutex
	records  map[string][]dns.RR
	queries  []string
	hits     map[netip.Addr]int
	received []received
	// files are served at their paths by the HTTP servers (a package
	// index: AddPackage).
	files map[string][]byte
}

// newFakeNet builds a fake internet; it is gone at the end of the test.
func newFakeNet(t testing.TB) *fakeNet {
	t.Helper()
	f := &fakeNet{records: map[string][]dns.RR{}, hits: map[netip.Addr]int{}, files: map[string][]byte{}}
	t.Cleanup(func() { f.close(t) })
	f.takeIndex(t)
	n := f.n
	f.HostAddr = netip.MustParseAddr(fmt.Sprintf("198.18.%d.1", n))
	f.HostAddr6 = netip.MustParseAddr(fmt.Sprintf("2001:2:0:%x::1", n))
	inside, inside6 := netip.MustParseAddr(fmt.Sprintf("198.18.%d.2", n)), netip.MustParseAddr(fmt.Sprintf("2001:2:0:%x::2", n))
	f.Web = netip.MustParseAddr(fmt.Sprintf("198.19.%d.10", n))
	f.Other = netip.MustParseAddr(fmt.Sprintf("198.19.%d.11", n))
	dnsAddr := netip.MustParseAddr(fmt.Sprintf("198.19.%d.53", n))
	f.Web6 = netip.MustParseAddr(fmt.Sprintf("2001:2:1:%x::10", n))
	dns6 := netip.MustParseAddr(fmt.Sprintf("2001:2:1:%x::53", n))
	f.Metadata = netip.MustParseAddr(fmt.Sprintf("169.254.77.%d", n))
	f.Private = netip.MustParseAddr(fmt.Sprintf("10.255.%d.1", n))
	f.DNS, f.DNS6 = netip.AddrPortFrom(dnsAddr, 53), netip.AddrPortFrom(dns6, 53)

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
	f.ns = ns
	if err := netns.Set(host); err != nil {
		t.Fatal(err)
	}
	f.link = fmt.Sprintf("fnet%d", n)
	if err := netlink.LinkAdd(&netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: f.link}, PeerName: "eth0", PeerNamespace: netlink.NsFd(int(ns))}); err != nil {
		t.Fatal(err)
	}
	hl, err := netlink.LinkByName(f.link)
	if err != nil {
		t.Fatal(err)
	}
	_ = netlink.LinkSetAlias(hl, "sandboxd-test-fakenet")
	addAddr(t, nil, hl, f.HostAddr, 30)
	addAddr(t, nil, hl, f.HostAddr6, 64)
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
	addAddr(t, h, eth, inside, 30)
	addAddr(t, h, eth, inside6, 64)
	for _, a := range []netip.Addr{f.Web, f.Other, dnsAddr, f.Metadata, f.Private} {
		addAddr(t, h, lo, a, 32)
	}
	for _, a := range []netip.Addr{f.Web6, dns6} {
		addAddr(t, h, lo, a, 128)
	}
	for _, l := range []netlink.Link{lo, eth} {
		if err := h.LinkSetUp(l); err != nil {
			t.Fatal(err)
		}
	}
	// Replies go back through the host (sandboxes' traffic is
	// masqueraded to the host's address on this link).
	for _, gw := range []netip.Addr{f.HostAddr, f.HostAddr6} {
		if err := h.RouteAdd(&netlink.Route{LinkIndex: eth.Attrs().Index, Gw: gw.AsSlice()}); err != nil {
			t.Fatal(err)
		}
	}
	// The host reaches the servers and stand-ins through the link.
	for _, p := range []netip.Prefix{
		netip.PrefixFrom(f.Web, 24).Masked(), netip.PrefixFrom(f.Web6, 64).Masked(),
		netip.PrefixFrom(f.Metadata, 32), netip.PrefixFrom(f.Private, 32),
	} {
		gw := inside
		if p.Addr().Is6() {
			gw = inside6
		}
		r := &netlink.Route{LinkIndex: hl.Attrs().Index, Dst: prefixNet(p), Gw: gw.AsSlice()}
		if err := netlink.RouteAdd(r); err != nil {
			t.Fatalf("route %s: %v", p, err)
		}
		f.routes = append(f.routes, r)
	}
	waitNoTentative(t, h)

	// The servers listen inside: a socket keeps the namespace it was made in.
	if err := netns.Set(ns); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = netns.Set(host) }()
	for _, a := range []netip.Addr{f.Web, f.Other, f.Web6, f.Metadata, f.Private} {
		f.serveHTTP(t, a)
	}
	for _, a := range []netip.Addr{f.Web, f.Other, f.Web6} {
		f.serveEcho(t, a)
	}
	f.serveDiscard(t, f.Web)
	for _, a := range []netip.Addr{dnsAddr, dns6} {
		f.serveDNS(t, a, 53)
	}
	// Also on a port the daemon does not redirect: a baseline of DNS
	// straight to the upstream (BenchmarkDNSDirect).
	f.serveDNS(t, dnsAddr, 5353)
	return f
}

// takeIndex picks a free fixture index, held by a file lock for the
// fixture's life, so fixtures of parallel tests and processes never share
// addresses.
func (f *fakeNet) takeIndex(t testing.TB) {
	dir := filepath.Join(os.TempDir(), "sandboxd-fakenet")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	for n := 1; n <= 200; n++ {
		lf, err := os.OpenFile(filepath.Join(dir, fmt.Sprintf("%d.lock", n)), os.O_CREATE|os.O_RDWR, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		if unix.Flock(int(lf.Fd()), unix.LOCK_EX|unix.LOCK_NB) == nil {
			f.n, f.lock = n, lf
			return
		}
		lf.Close()
	}
	t.Fatal("no free fake internet index")
}

func prefixNet(p netip.Prefix) *net.IPNet {
	return &net.IPNet{IP: p.Addr().AsSlice(), Mask: net.CIDRMask(p.Bits(), p.Addr().BitLen())}
}

func addAddr(t testing.TB, h *netlink.Handle, l netlink.Link, a netip.Addr, bits int) {
	t.Helper()
	if h == nil {
		h = &netlink.Handle{}
	}
	addr := &netlink.Addr{IPNet: prefixNet(netip.PrefixFrom(a, bits))}
	if a.Is6() {
		addr.Flags = unix.IFA_F_NODAD
	}
	if err := h.AddrAdd(l, addr); err != nil {
		t.Fatalf("address %s: %v", a, err)
	}
}

// waitNoTentative waits until no IPv6 address inside is tentative.
func waitNoTentative(t testing.TB, h *netlink.Handle) {
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		addrs, err := network.Consistent(func() ([]netlink.Addr, error) { return h.AddrList(nil, netlink.FAMILY_V6) })
		if err != nil {
			t.Fatal(err)
		}
		tentative := false
		for _, a := range addrs {
			tentative = tentative || a.Flags&unix.IFA_F_TENTATIVE != 0
		}
		if !tentative {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (f *fakeNet) serveHTTP(t testing.TB, a netip.Addr) {
	l, err := net.Listen("tcp", netip.AddrPortFrom(a, 80).String())
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.hits[a]++
		body, ok := f.files[r.URL.Path]
		f.mu.Unlock()
		if ok {
			_, _ = w.Write(body)
			return
		}
		fmt.Fprintf(w, "hello from %s", a)
	})}
	go srv.Serve(l)
	f.closers = append(f.closers, srv)
}

// serveTCP serves each connection to a:port with handle, until the
// fixture closes.
func (f *fakeNet) serveTCP(t testing.TB, a netip.Addr, port uint16, handle func(net.Conn)) {
	l, err := net.Listen("tcp", netip.AddrPortFrom(a, port).String())
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				handle(c)
			}()
		}
	}()
	f.closers = append(f.closers, l)
}

func (f *fakeNet) serveEcho(t testing.TB, a netip.Addr) {
	f.serveTCP(t, a, 7, func(c net.Conn) { _, _ = io.Copy(c, c) })
}

// serveDiscard takes what is sent to port 9 and records, per
// connection, how many bytes came and over how long (first byte to end),
// and how many in the first second.
func (f *fakeNet) serveDiscard(t testing.TB, a netip.Addr) {
	f.serveTCP(t, a, 9, func(c net.Conn) {
		buf := make([]byte, 64<<10)
		var r received
		var first time.Time
		for {
			k, err := c.Read(buf)
			if k > 0 && first.IsZero() {
				first = time.Now()
			}
			r.bytes += int64(k)
			if time.Since(first) < time.Second {
				r.firstSecond = r.bytes
			}
			if err != nil {
				break
			}
		}
		r.took = time.Since(first)
		f.mu.Lock()
		f.received = append(f.received, r)
		f.mu.Unlock()
	})
}

// received is what one connection to the discard server brought, and
// how much of it in its first second.
type received struct {
	bytes, firstSecond int64
	took               time.Duration
}

// steadyKbps is the rate after the first second.
func (r received) steadyKbps() float64 {
	return float64(r.bytes-r.firstSecond) * 8 / 1000 / (r.took - time.Second).Seconds()
}

// Received is what the discard server's connections brought, in order.
func (f *fakeNet) Received() []received {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]received(nil), f.received...)
}

func (f *fakeNet) serveDNS(t testing.TB, a netip.Addr, port uint16) {
	pc, err := net.ListenPacket("udp", netip.AddrPortFrom(a, port).String())
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", netip.AddrPortFrom(a, port).String())
	if err != nil {
		t.Fatal(err)
	}
	for _, srv := range []*dns.Server{{PacketConn: pc, Handler: dns.HandlerFunc(f.answer)}, {Listener: l, Handler: dns.HandlerFunc(f.answer)}} {
		go srv.ActivateAndServe()
		f.closers = append(f.closers, closerFunc(srv.Shutdown))
	}
}

type closerFunc func() error

func (c closerFunc) Close() error { return c() }

// answer answers from the records, following CNAMEs.
func (f *fakeNet) answer(w dns.ResponseWriter, q *dns.Msg) {
	m := new(dns.Msg)
	m.SetReply(q)
	m.Authoritative = true
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(q.Question) == 1 {
		qq := q.Question[0]
		name := strings.ToLower(strings.TrimSuffix(qq.Name, "."))
		f.queries = append(f.queries, name+"/"+dns.TypeToString[qq.Qtype])
		found := false
		for range 8 {
			rrs, ok := f.records[name]
			if !ok {
				break
			}
			found = true
			next := ""
			for _, rr := range rrs {
				if cn, ok := rr.(*dns.CNAME); ok {
					m.Answer = append(m.Answer, dns.Copy(rr))
					next = strings.TrimSuffix(cn.Target, ".")
				} else if rr.Header().Rrtype == qq.Qtype {
					m.Answer = append(m.Answer, dns.Copy(rr))
				}
			}
			if next == "" {
				break
			}
			name = next
		}
		if !found {
			m.Rcode = dns.RcodeNameError
		}
	}
	_ = w.WriteMsg(m)
}

// SetRecord makes name answer A and AAAA records of addrs.
func (f *fakeNet) SetRecord(name string, ttl time.Duration, addrs ...netip.Addr) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var rrs []dns.RR
	for _, a := range addrs {
		h := dns.RR_Header{Name: dns.Fqdn(name), Class: dns.ClassINET, Ttl: uint32(ttl / time.Second)}
		if a.Is4() {
			h.Rrtype = dns.TypeA
			rrs = append(rrs, &dns.A{Hdr: h, A: a.AsSlice()})
		} else {
			h.Rrtype = dns.TypeAAAA
			rrs = append(rrs, &dns.AAAA{Hdr: h, AAAA: a.AsSlice()})
		}
	}
	f.records[name] = append(f.records[name][:0:0], rrs...)
}

// SetCNAME makes name an alias of target.
func (f *fakeNet) SetCNAME(name, target string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.records[name] = []dns.RR{&dns.CNAME{Hdr: dns.RR_Header{Name: dns.Fqdn(name), Rrtype: dns.TypeCNAME, Class: dns.ClassINET, Ttl: 60}, Target: dns.Fqdn(target)}}
}

// SetTXT adds a TXT record to name.
func (f *fakeNet) SetTXT(name, text string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.records[name] = append(f.records[name], &dns.TXT{Hdr: dns.RR_Header{Name: dns.Fqdn(name), Rrtype: dns.TypeTXT, Class: dns.ClassINET, Ttl: 60}, Txt: []string{text}})
}

// Queries are the questions the DNS server was asked ("name/TYPE").
func (f *fakeNet) Queries() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.queries...)
}

// Hits is how many HTTP requests the server on a got.
func (f *fakeNet) Hits(a netip.Addr) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.hits[a]
}

// close removes everything of the fixture.
func (f *fakeNet) close(t testing.TB) {
	for _, c := range f.closers {
		_ = c.Close()
	}
	for _, r := range f.routes {
		if err := netlink.RouteDel(r); err != nil {
			t.Errorf("remove route %s: %v", r.Dst, err)
		}
	}
	if f.link != "" {
		if l, err := netlink.LinkByName(f.link); err == nil {
			if err := netlink.LinkDel(l); err != nil {
				t.Errorf("remove %s: %v", f.link, err)
			}
		}
	}
	if f.ns != 0 {
		f.ns.Close()
	}
	if f.lock != nil {
		f.lock.Close()
	}
}

// AddPackage serves a pure-Python wheel of name==version, whose module
// name has one file, __init__.py, with code, in a simple (PEP 503) index
// at /simple/.
func (f *fakeNet) AddPackage(t testing.TB, name, version, code string) {
	t.Helper()
	dist := name + "-" + version + ".dist-info/"
	files := []struct{ path, body string }{
		{name + "/__init__.py", code},
		{dist + "METADATA", "Metadata-Version: 2.1\nName: " + name + "\nVersion: " + version + "\n"},
		{dist + "WHEEL", "Wheel-Version: 1.0\nGenerator: sandboxd-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"},
	}
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	var record strings.Builder
	for _, fl := range files {
		w, err := zw.Create(fl.path)
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(w, fl.body)
		sum := sha256.Sum256([]byte(fl.body))
		fmt.Fprintf(&record, "%s,sha256=%s,%d\n", fl.path, base64.RawURLEncoding.EncodeToString(sum[:]), len(fl.body))
	}
	record.WriteString(dist + "RECORD,,\n")
	w, err := zw.Create(dist + "RECORD")
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(w, record.String())
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	wheel := name + "-" + version + "-py3-none-any.whl"
	sum := sha256.Sum256(buf.Bytes())
	f.mu.Lock()
	defer f.mu.Unlock()
	f.files["/files/"+wheel] = buf.Bytes()
	f.files["/simple/"+name+"/"] = []byte(fmt.Sprintf("<!DOCTYPE html><html><body><a href=\"/files/%s#sha256=%x\">%s</a></body></html>", wheel, sum, wheel))
	f.files["/simple/"] = []byte(fmt.Sprintf("<!DOCTYPE html><html><body><a href=\"/simple/%s/\">%s</a></body></html>", name, name))
}
