// Package netdns is the DNS server sandboxes with a network ask (their
// resolv.conf names their gateway; the daemon's table sends any DNS of
// theirs here). It knows a sandbox by its source address, answers
// NXDOMAIN for names its policy does not allow without asking anyone,
// forwards allowed ones to the configured resolvers, drops answers that
// point at addresses the policy blocks (rebinding to loopback, the host,
// metadata, private ranges), and pins what is left into the session's
// allowed set, before the answer leaves, for the record's TTL.
//
// Only A, AAAA and CNAME are forwarded: other types (TXT, NULL, …, the
// usual DNS tunnels; HTTPS and SVCB, whose hints would carry addresses no
// pin covers) are answered empty.
//
// Each session may ask Config.Rate queries a second on average (a token
// bucket of Config.Burst): past it a query is answered REFUSED at once,
// before its policy is looked at or anyone asked.
package netdns

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/miekg/dns"

	"github.com/sandboxd/sandboxd/isolation/netpolicy"
)

// Pin is one address an answer let a session reach.
type Pin struct {
	// Name is the name the sandbox asked for (a policy change keeps the
	// pin only if it still allows the name).
	Name  string
	Addr  netip.Addr
	Ports []uint16 // nil: every port
	TTL   time.Duration
}

// Config is what the server needs of the daemon.
type Config struct {
	// Upstreams are "ip" or "ip:port" (53 by default), asked in order.
	Upstreams []string
	// Lookup says which session a source address is, and its policy;
	// false: not a sandbox of the daemon (REFUSED).
	Lookup func(src netip.Addr) (session string, p *netpolicy.Policy, ok bool)
	// Pin is told an answer's addresses before it is sent; an error
	// answers SERVFAIL.
	Pin func(ctx context.Context, session string, pins []Pin) error
	// HostAddr, if set, says whether an address is the host's: no answer
	// may carry one (a name rebound to the host).
	HostAddr func(netip.Addr) bool
	// Refused, if set, is told of each refused query or dropped address:
	// why, of a fixed set, and detail, free text for a log.
	Refused func(session, name string, why Refusal, detail string)
	// Rate is the queries a second one session may ask on average, Burst
	// how many at once (0: no limit).
	Rate  float64
	Burst int
	// Now is the clock of the rate limit (time.Now by default).
	Now func() time.Time
	// MinTTL and MaxTTL bound a pin's life (30 s and 1 h by default);
	// Timeout bounds one upstream exchange (3 s).
	MinTTL, MaxTTL, Timeout time.Duration
	Logger                  *slog.Logger
}

// Refusal is why a query was refused or an answer's address dropped: a
// fixed set, so that it can label a metric.
type Refusal string

const (
	RefusedName    Refusal = "name"    // a name the policy does not allow: NXDOMAIN
	RefusedType    Refusal = "type"    // a type that is not forwarded: answered empty
	RefusedAddress Refusal = "address" // an answer's address the policy blocks: dropped
	RefusedRate    Refusal = "rate"    // over the session's rate: REFUSED
)

// Refusals are every Refusal.
var Refusals = []Refusal{RefusedName, RefusedType, RefusedAddress, RefusedRate}

// maxInFlight bounds the queries waiting on upstreams at once.
const maxInFlight = 256

// Server answers sandboxes' DNS.
type Server struct {
	cfg       Config
	upstreams []string
	inFlight  chan struct{}
	limit     *limiter

	mu      sync.Mutex
	servers []*dns.Server
}

// New checks cfg and returns a server.
func New(cfg Config) (*Server, error) {
	if cfg.Lookup == nil || cfg.Pin == nil {
		return nil, errors.New("netdns: Lookup and Pin are needed")
	}
	if cfg.MinTTL == 0 {
		cfg.MinTTL = 30 * time.Second
	}
	if cfg.MaxTTL == 0 {
		cfg.MaxTTL = time.Hour
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 3 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Rate < 0 || cfg.Burst < 0 {
		return nil, errors.New("netdns: Rate and Burst must be 0 (no limit) or more")
	}
	s := &Server{cfg: cfg, inFlight: make(chan struct{}, maxInFlight), limit: newLimiter(cfg.Rate, cfg.Burst, cfg.Now)}
	for _, u := range cfg.Upstreams {
		ap, err := ParseUpstream(u)
		if err != nil {
			return nil, err
		}
		s.upstreams = append(s.upstreams, ap.String())
	}
	return s, nil
}

// ParseUpstream parses a DNS server: "ADDR" (port 53) or "ADDR:PORT".
func ParseUpstream(s string) (netip.AddrPort, error) {
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return ap, nil
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("DNS server %q is not an address or address:port", s)
	}
	return netip.AddrPortFrom(a, 53), nil
}

// Serve answers on udp and tcp (either may be nil) until ctx ends or
// Close.
func (s *Server) Serve(ctx context.Context, udp net.PacketConn, tcp net.Listener) error {
	var srvs []*dns.Server
	if udp != nil {
		srvs = append(srvs, &dns.Server{PacketConn: udp, Handler: s})
	}
	if tcp != nil {
		srvs = append(srvs, &dns.Server{Listener: tcp, Handler: s, ReadTimeout: 5 * time.Second, WriteTimeout: 5 * time.Second})
	}
	s.mu.Lock()
	s.servers = append(s.servers, srvs...)
	s.mu.Unlock()
	errc := make(chan error, len(srvs))
	for _, srv := range srvs {
		go func() { errc <- srv.ActivateAndServe() }()
	}
	select {
	case <-ctx.Done():
		return s.Close()
	case err := <-errc:
		_ = s.Close()
		return err
	}
}

// Close stops serving.
func (s *Server) Close() error {
	s.mu.Lock()
	srvs := s.servers
	s.servers = nil
	s.mu.Unlock()
	for _, srv := range srvs {
		_ = srv.Shutdown()
	}
	return nil
}

// ServeDNS answers one query (dns.Handler).
func (s *Server) ServeDNS(w dns.ResponseWriter, q *dns.Msg) {
	src, udp := source(w.RemoteAddr())
	ctx, cancel := context.WithTimeout(context.Background(), 2*s.cfg.Timeout*time.Duration(max(1, len(s.upstreams))))
	defer cancel()
	m := s.answer(ctx, src, q)
	if udp {
		size := dns.MinMsgSize
		if opt := q.IsEdns0(); opt != nil {
			size = int(min(max(opt.UDPSize(), dns.MinMsgSize), 1232))
		}
		m.Truncate(size)
	}
	_ = w.WriteMsg(m)
}

func source(a net.Addr) (netip.Addr, bool) {
	switch a := a.(type) {
	case *net.UDPAddr:
		ap := a.AddrPort()
		return ap.Addr().Unmap(), true
	case *net.TCPAddr:
		ap := a.AddrPort()
		return ap.Addr().Unmap(), false
	}
	return netip.Addr{}, false
}

// answer is the reply to q from a sandbox at src.
func (s *Server) answer(ctx context.Context, src netip.Addr, q *dns.Msg) *dns.Msg {
	m := new(dns.Msg)
	m.SetReply(q)
	m.RecursionAvailable = true
	if opt := q.IsEdns0(); opt != nil {
		m.SetEdns0(1232, false)
	}
	session, p, ok := s.cfg.Lookup(src)
	if !ok {
		m.Rcode = dns.RcodeRefused
		return m
	}
	// Every query of a session takes a token, a malformed one too.
	if ok, warn := s.limit.allow(session); !ok {
		// REFUSED rather than silence: a stub resolver (glibc, musl, Go's)
		// takes it as this server's answer, asks its next server if it has
		// one (a sandbox has not) and fails the lookup at once, where a
		// dropped query is sent again after its timeout and the program
		// hangs the while: more queries, not fewer. The source is the
		// sandbox's own link (the table admits no other), so an answer
		// reflects on no one.
		if warn {
			s.cfg.Logger.Warn("a session's DNS queries are over its rate: refusing them (logged once a minute)", "session", session, "rate", s.cfg.Rate, "burst", s.cfg.Burst)
		}
		name := ""
		if len(q.Question) > 0 {
			name = strings.ToLower(strings.TrimSuffix(q.Question[0].Name, "."))
		}
		s.refused(session, name, RefusedRate, "")
		m.Rcode = dns.RcodeRefused
		return m
	}
	if q.Opcode != dns.OpcodeQuery || len(q.Question) != 1 || q.Question[0].Qclass != dns.ClassINET {
		m.Rcode = dns.RcodeNotImplemented
		return m
	}
	question := q.Question[0]
	name := strings.ToLower(strings.TrimSuffix(question.Name, "."))
	ports, allowed := p.NamePorts(name)
	if !allowed {
		s.refused(session, name, RefusedName, "not allowed")
		m.Rcode = dns.RcodeNameError
		return m
	}
	switch question.Qtype {
	case dns.TypeA, dns.TypeAAAA, dns.TypeCNAME:
	case dns.TypePTR:
		m.Rcode = dns.RcodeNameError
		return m
	default:
		s.refused(session, name, RefusedType, "type "+dns.TypeToString[question.Qtype])
		return m // NOERROR, no records
	}
	select {
	case s.inFlight <- struct{}{}:
		defer func() { <-s.inFlight }()
	default:
		m.Rcode = dns.RcodeServerFailure
		return m
	}
	up, err := s.forward(ctx, question)
	if err != nil {
		s.cfg.Logger.Debug("DNS upstream", "session", session, "name", name, "err", err)
		m.Rcode = dns.RcodeServerFailure
		return m
	}
	m.Rcode = up.Rcode
	var pins []Pin
	for _, rr := range up.Answer {
		var a netip.Addr
		switch rr := rr.(type) {
		case *dns.A:
			a, _ = netip.AddrFromSlice(rr.A.To4())
		case *dns.AAAA:
			a, _ = netip.AddrFromSlice(rr.AAAA.To16())
		case *dns.CNAME:
			m.Answer = append(m.Answer, rr)
			continue
		default:
			continue
		}
		if !a.IsValid() || !p.Reachable(a) || (s.cfg.HostAddr != nil && s.cfg.HostAddr(a)) {
			s.refused(session, name, RefusedAddress, "blocked address "+a.String())
			continue
		}
		ttl := min(max(time.Duration(rr.Header().Ttl)*time.Second, s.cfg.MinTTL), s.cfg.MaxTTL)
		// The answer is cached half its pin's life at most: a pin is
		// renewed only when half of it is gone, and a client asking
		// again by then always finds its address pinned.
		rr.Header().Ttl = min(rr.Header().Ttl, uint32(ttl/2/time.Second))
		pins = append(pins, Pin{Name: name, Addr: a.Unmap(), Ports: ports, TTL: ttl})
		m.Answer = append(m.Answer, rr)
	}
	if len(pins) > 0 {
		if err := s.cfg.Pin(ctx, session, pins); err != nil {
			s.cfg.Logger.Warn("DNS pin", "session", session, "name", name, "err", err)
			m.Answer = nil
			m.Rcode = dns.RcodeServerFailure
		}
	}
	return m
}

// forward asks the upstreams, in order, over UDP and over TCP when the
// answer is truncated.
func (s *Server) forward(ctx context.Context, question dns.Question) (*dns.Msg, error) {
	if len(s.upstreams) == 0 {
		return nil, errors.New("no DNS servers")
	}
	q := new(dns.Msg)
	q.SetQuestion(question.Name, question.Qtype)
	q.RecursionDesired = true
	q.SetEdns0(1232, false)
	var lastErr error
	for _, u := range s.upstreams {
		for _, network := range []string{"udp", "tcp"} {
			c := &dns.Client{Net: network, Timeout: s.cfg.Timeout, UDPSize: 1232}
			r, _, err := c.ExchangeContext(ctx, q, u)
			if err != nil {
				lastErr = err
				break // the next upstream
			}
			if r.Truncated && network == "udp" {
				continue
			}
			if r.Rcode == dns.RcodeServerFailure || r.Rcode == dns.RcodeRefused {
				lastErr = fmt.Errorf("%s answered %s", u, dns.RcodeToString[r.Rcode])
				break
			}
			return r, nil
		}
	}
	return nil, lastErr
}

func (s *Server) refused(session, name string, why Refusal, detail string) {
	if s.cfg.Refused != nil {
		s.cfg.Refused(session, name, why, detail)
	}
}
