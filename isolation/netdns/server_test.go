package netdns

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/sandboxd/sandboxd/isolation/netpolicy"
)

// fakeUpstream is a DNS server on loopback answering from fixed records,
// counting what it is asked.
type fakeUpstream struct {
	addr string
	mu   sync.Mutex
	seen []string
}

var upstreamRecords = map[string][]string{
	"web.test.":     {"web.test. 300 IN A 198.18.5.5", "web.test. 300 IN AAAA 2001:2::5"},
	"short.test.":   {"short.test. 5 IN A 198.18.5.6"},
	"long.test.":    {"long.test. 86400 IN A 198.18.5.7"},
	"local.test.":   {"local.test. 60 IN A 127.0.0.1"},
	"private.test.": {"private.test. 60 IN A 10.1.2.3", "private.test. 60 IN A 198.18.5.8"},
	"meta.test.":    {"meta.test. 60 IN A 169.254.169.254"},
	"alias.test.":   {"alias.test. 60 IN CNAME web.test.", "web.test. 300 IN A 198.18.5.5"},
	"txt.test.":     {"txt.test. 60 IN TXT \"secret\""},
	"host.test.":    {"host.test. 60 IN A 198.18.9.9"},
}

func newUpstream(t *testing.T) *fakeUpstream {
	u := &fakeUpstream{}
	h := dns.HandlerFunc(func(w dns.ResponseWriter, q *dns.Msg) {
		m := new(dns.Msg)
		m.SetReply(q)
		qq := q.Question[0]
		u.mu.Lock()
		u.seen = append(u.seen, qq.Name+dns.TypeToString[qq.Qtype])
		u.mu.Unlock()
		recs, ok := upstreamRecords[strings.ToLower(qq.Name)]
		if !ok && qq.Name == "big.test." {
			for i := range 60 {
				rr, _ := dns.NewRR("big.test. 60 IN A 198.18.6." + string(rune('0'+i%10)))
				m.Answer = append(m.Answer, rr)
			}
			ok = true
		}
		if !ok {
			m.Rcode = dns.RcodeNameError
		}
		for _, r := range recs {
			rr, err := dns.NewRR(r)
			if err != nil {
				t.Error(err)
			}
			if rr.Header().Rrtype == qq.Qtype || rr.Header().Rrtype == dns.TypeCNAME {
				m.Answer = append(m.Answer, rr)
			}
		}
		if _, udp := w.RemoteAddr().(*net.UDPAddr); udp {
			m.Truncate(512)
		}
		_ = w.WriteMsg(m)
	})
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	u.addr = pc.LocalAddr().String()
	l, err := net.Listen("tcp", u.addr)
	if err != nil {
		t.Fatal(err)
	}
	for _, srv := range []*dns.Server{{PacketConn: pc, Handler: h}, {Listener: l, Handler: h}} {
		go srv.ActivateAndServe()
		t.Cleanup(func() { _ = srv.Shutdown() })
	}
	return u
}

func (u *fakeUpstream) asked(q string) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	return slices.Contains(u.seen, q)
}

type pinLog struct {
	mu   sync.Mutex
	pins []Pin
	fail error
}

func (l *pinLog) pin(_ context.Context, session string, pins []Pin) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.fail != nil {
		return l.fail
	}
	l.pins = append(l.pins, pins...)
	return nil
}

func (l *pinLog) take() []Pin {
	l.mu.Lock()
	defer l.mu.Unlock()
	p := l.pins
	l.pins = nil
	return p
}

// serve runs a server for sandboxes at 127.0.0.1 with policy p.
func serve(t *testing.T, p *netpolicy.Policy, pins *pinLog) (addr string, u *fakeUpstream) {
	u = newUpstream(t)
	s, err := New(Config{
		Upstreams: []string{u.addr},
		Lookup: func(src netip.Addr) (string, *netpolicy.Policy, bool) {
			return "s1", p, src == netip.MustParseAddr("127.0.0.1")
		},
		Pin:      pins.pin,
		HostAddr: func(a netip.Addr) bool { return a == netip.MustParseAddr("198.18.9.9") },
		Timeout:  time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", pc.LocalAddr().String())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = s.Serve(ctx, pc, l) }()
	t.Cleanup(func() { cancel(); <-done })
	time.Sleep(20 * time.Millisecond)
	return pc.LocalAddr().String(), u
}

func ask(t *testing.T, addr, network, name string, qtype uint16) *dns.Msg {
	t.Helper()
	q := new(dns.Msg)
	q.SetQuestion(dns.Fqdn(name), qtype)
	c := &dns.Client{Net: network, Timeout: 3 * time.Second}
	r, _, err := c.Exchange(q, addr)
	// UDP may lose a datagram, and a resolver asks again: CI once lost
	// one on loopback under load.
	for try := 1; err != nil && network == "udp" && try < 3; try++ {
		r, _, err = c.Exchange(q, addr)
	}
	if err != nil {
		t.Fatalf("ask %s: %v", name, err)
	}
	return r
}

func addrs(m *dns.Msg) []string {
	var out []string
	for _, rr := range m.Answer {
		switch rr := rr.(type) {
		case *dns.A:
			out = append(out, rr.A.String())
		case *dns.AAAA:
			out = append(out, rr.AAAA.String())
		}
	}
	return out
}

func TestAllowlist(t *testing.T) {
	p, err := netpolicy.Parse(netpolicy.ModeAllowlist, []string{"web.test:443", "short.test", "long.test", "local.test", "private.test", "meta.test", "alias.test", "txt.test", "host.test", "big.test"})
	if err != nil {
		t.Fatal(err)
	}
	pins := &pinLog{}
	addr, u := serve(t, p, pins)

	// An allowed name is answered and pinned, with its entry's port.
	r := ask(t, addr, "udp", "web.test", dns.TypeA)
	if r.Rcode != dns.RcodeSuccess || !slices.Equal(addrs(r), []string{"198.18.5.5"}) {
		t.Fatalf("web.test: %v", r)
	}
	if got := pins.take(); len(got) != 1 || got[0].Addr != netip.MustParseAddr("198.18.5.5") || !slices.Equal(got[0].Ports, []uint16{443}) || got[0].Name != "web.test" || got[0].TTL != 300*time.Second {
		t.Fatalf("pins %+v", got)
	}
	if r := ask(t, addr, "tcp", "web.test", dns.TypeAAAA); !slices.Equal(addrs(r), []string{"2001:2::5"}) {
		t.Fatalf("AAAA over TCP: %v", r)
	}
	pins.take()
	// TTLs are clamped; the answer is cached half its pin's life at most.
	ask(t, addr, "udp", "short.test", dns.TypeA)
	if got := pins.take(); len(got) != 1 || got[0].TTL != 30*time.Second {
		t.Fatalf("short TTL pin %+v", got)
	}
	r = ask(t, addr, "udp", "long.test", dns.TypeA)
	if got := pins.take(); len(got) != 1 || got[0].TTL != time.Hour || r.Answer[0].Header().Ttl != 1800 {
		t.Fatalf("long TTL pin %+v, answer TTL %d", got, r.Answer[0].Header().Ttl)
	}
	// Rebinding: loopback, private, metadata and host addresses are
	// dropped, the rest kept.
	for name, want := range map[string][]string{"local.test": nil, "private.test": {"198.18.5.8"}, "meta.test": nil, "host.test": nil} {
		if got := addrs(ask(t, addr, "udp", name, dns.TypeA)); !slices.Equal(got, want) {
			t.Errorf("%s answered %v, want %v", name, got, want)
		}
	}
	pins.take()
	// A CNAME's target need not be listed.
	if got := addrs(ask(t, addr, "udp", "alias.test", dns.TypeA)); !slices.Equal(got, []string{"198.18.5.5"}) {
		t.Errorf("alias.test: %v", got)
	}
	// Unlisted names: NXDOMAIN, never asked upstream.
	if r := ask(t, addr, "udp", "unlisted.test", dns.TypeA); r.Rcode != dns.RcodeNameError || u.asked("unlisted.test.A") {
		t.Errorf("unlisted: rcode %d, asked upstream %v", r.Rcode, u.asked("unlisted.test.A"))
	}
	// TXT (a DNS tunnel) is answered empty without asking.
	if r := ask(t, addr, "udp", "txt.test", dns.TypeTXT); r.Rcode != dns.RcodeSuccess || len(r.Answer) != 0 || u.asked("txt.test.TXT") {
		t.Errorf("TXT: %v", r)
	}
	// A big answer is truncated over UDP and whole over TCP (the server
	// itself asked upstream over TCP).
	if r := ask(t, addr, "tcp", "big.test", dns.TypeA); len(r.Answer) != 60 {
		t.Errorf("big answer over TCP has %d records", len(r.Answer))
	}
	if r := ask(t, addr, "udp", "big.test", dns.TypeA); !r.Truncated {
		t.Errorf("big answer over UDP not truncated (%d records)", len(r.Answer))
	}
	// A failed pin is a failed answer.
	pins.mu.Lock()
	pins.fail = errors.New("nft broke")
	pins.mu.Unlock()
	if r := ask(t, addr, "udp", "web.test", dns.TypeA); r.Rcode != dns.RcodeServerFailure || len(r.Answer) != 0 {
		t.Errorf("failed pin answered %v", r)
	}
}

func TestUnknownSourceRefused(t *testing.T) {
	s, err := New(Config{Upstreams: []string{"127.0.0.1:1"}, Lookup: func(netip.Addr) (string, *netpolicy.Policy, bool) { return "", nil, false },
		Pin: (&pinLog{}).pin})
	if err != nil {
		t.Fatal(err)
	}
	q := new(dns.Msg)
	q.SetQuestion("web.test.", dns.TypeA)
	if m := s.answer(context.Background(), netip.MustParseAddr("10.0.0.1"), q); m.Rcode != dns.RcodeRefused {
		t.Fatalf("rcode %d", m.Rcode)
	}
}

// FuzzQuery: any message a sandbox sends gets an answer or is dropped;
// nothing panics, and nothing is forwarded for a name the policy refuses.
func FuzzQuery(f *testing.F) {
	q := new(dns.Msg)
	q.SetQuestion("web.test.", dns.TypeA)
	b, _ := q.Pack()
	f.Add(b)
	q.SetQuestion("x.other.", dns.TypeTXT)
	b, _ = q.Pack()
	f.Add(b)
	p, _ := netpolicy.Parse(netpolicy.ModeAllowlist, []string{"*.other"})
	s, err := New(Config{
		Lookup: func(netip.Addr) (string, *netpolicy.Policy, bool) { return "s", p, true },
		Pin:    (&pinLog{}).pin,
	})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		m := new(dns.Msg)
		if m.Unpack(b) != nil {
			return
		}
		r := s.answer(context.Background(), netip.MustParseAddr("10.0.0.2"), m)
		if r == nil {
			t.Fatal("no answer")
		}
		if _, err := r.Pack(); err != nil {
			t.Fatalf("answer does not pack: %v", err)
		}
	})
}
