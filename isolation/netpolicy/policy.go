// Package netpolicy is a session's egress policy: its mode and its allow
// list, parsed from what a client sent, and the questions the network and
// the DNS ask of it (may this name be resolved, may this address be
// reached). It has no state and no dependencies: the daemon checks
// requests with it, isolation/network and isolation/netdns enforce it.
package netpolicy

import (
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
)

// The network modes of a session.
const (
	ModeNone      = "none"
	ModeAllowlist = "allowlist"
	ModeOpen      = "open"
)

// MaxEntries bounds an allow list.
const MaxEntries = 256

// Entry is one item of an allow list: `host`, `*.domain`, a CIDR or an
// address, each optionally `:port` (IPv6 with a port in brackets:
// `[2001:db8::/32]:443`).
type Entry struct {
	// Raw is the entry as given.
	Raw string
	// Host is a lower-case name without its trailing dot; "" for an
	// address entry.
	Host string
	// Wildcard: "*.github.com" matches any name below github.com, not
	// github.com itself.
	Wildcard bool
	// Prefix is an address entry's (a bare address is a /32 or /128).
	Prefix netip.Prefix
	// Port is the one port the entry opens; 0: every port.
	Port uint16
}

// Policy is a session's mode and allow list, and the limits of its
// traffic.
type Policy struct {
	Mode    string
	Entries []Entry
	// EgressKbps caps what the sandbox sends, in kilobits a second;
	// MaxConnections the connections it has open at once (0: no cap).
	EgressKbps     int
	MaxConnections int
}

func prefixes(s ...string) []netip.Prefix {
	out := make([]netip.Prefix, len(s))
	for i, p := range s {
		out[i] = netip.MustParsePrefix(p)
	}
	return out
}

// Blocked are the ranges no policy reaches unless a CIDR entry names them
// (the contract's list, with the unspecified and IPv4-mapped ranges,
// which are never public either, and the IPv6 ranges that carry an IPv4
// address a gateway may reach for them: NAT64 64:ff9b::/96, 6to4
// 2002::/16, Teredo 2001::/32, where 64:ff9b::a9fe:a9fe would be
// 169.254.169.254).
var Blocked = prefixes(
	"0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16",
	"172.16.0.0/12", "192.0.0.0/24", "192.168.0.0/16", "224.0.0.0/3",
	"::/128", "::1/128", "::ffff:0:0/96", "fc00::/7", "fe80::/10", "ff00::/8", "fd00:ec2::254/128",
	"64:ff9b::/96", "2002::/16", "2001::/32",
)

// Never are the ranges no entry may open: link-local and cloud metadata,
// and the NAT64 and 6to4 addresses that embed link-local IPv4.
var Never = prefixes("169.254.0.0/16", "fd00:ec2::254/128", "64:ff9b::a9fe:0/112", "2002:a9fe::/32")

// Parse checks a mode ("" is none) and its allow list.
func Parse(mode string, allow []string) (*Policy, error) {
	switch mode {
	case "":
		mode = ModeNone
	case ModeNone, ModeAllowlist, ModeOpen:
	default:
		return nil, fmt.Errorf("network %q: use %q, %q or %q", mode, ModeNone, ModeAllowlist, ModeOpen)
	}
	if mode == ModeNone && len(allow) > 0 {
		return nil, fmt.Errorf("network %q takes no allow list: use %q", ModeNone, ModeAllowlist)
	}
	if len(allow) > MaxEntries {
		return nil, fmt.Errorf("the allow list has %d entries, more than %d", len(allow), MaxEntries)
	}
	p := &Policy{Mode: mode}
	for _, s := range allow {
		e, err := ParseEntry(s)
		if err != nil {
			return nil, err
		}
		p.Entries = append(p.Entries, e)
	}
	return p, nil
}

// ParseEntry parses one allow entry.
func ParseEntry(s string) (Entry, error) {
	e := Entry{Raw: s}
	bad := func(why string) (Entry, error) {
		return Entry{}, fmt.Errorf("allow entry %q: %s", s, why)
	}
	target := s
	// A port: after "]" for bracketed IPv6, else after the one colon of
	// a name or an IPv4 address (a bare IPv6 address has several).
	if strings.HasPrefix(s, "[") {
		end := strings.Index(s, "]")
		if end < 0 {
			return bad("no closing ]")
		}
		target = s[1:end]
		rest := s[end+1:]
		if rest != "" {
			if !strings.HasPrefix(rest, ":") {
				return bad("only :port may follow ]")
			}
			port, err := parsePort(rest[1:])
			if err != nil {
				return bad(err.Error())
			}
			e.Port = port
		}
		if !strings.Contains(target, ":") {
			return bad("brackets are for IPv6")
		}
	} else if strings.Count(s, ":") == 1 {
		i := strings.IndexByte(s, ':')
		port, err := parsePort(s[i+1:])
		if err != nil {
			return bad(err.Error())
		}
		target, e.Port = s[:i], port
	}
	if p, err := netip.ParsePrefix(target); err == nil {
		e.Prefix = p.Masked()
	} else if a, err := netip.ParseAddr(target); err == nil && a.Zone() == "" {
		e.Prefix = netip.PrefixFrom(a, a.BitLen())
	} else if strings.ContainsAny(target, ":/") {
		return bad("not an address, CIDR, host name or *.domain")
	} else {
		name := strings.ToLower(strings.TrimSuffix(target, "."))
		if rest, ok := strings.CutPrefix(name, "*."); ok {
			e.Wildcard, name = true, rest
		}
		if !validName(name) {
			return bad("not an address, CIDR, host name or *.domain")
		}
		e.Host = name
		return e, nil
	}
	if a := e.Prefix.Addr(); a.Is4In6() && e.Prefix.Bits() >= 96 {
		e.Prefix = netip.PrefixFrom(a.Unmap(), e.Prefix.Bits()-96).Masked()
	}
	for _, n := range Never {
		if e.Prefix.Overlaps(n) {
			return bad(fmt.Sprintf("it covers %s (link-local and cloud metadata), which no policy may reach", n))
		}
	}
	return e, nil
}

func parsePort(s string) (uint16, error) {
	n, err := strconv.ParseUint(s, 10, 16)
	if err != nil || n == 0 || strings.HasPrefix(s, "+") {
		return 0, fmt.Errorf("port %q is not a number from 1 to 65535", s)
	}
	return uint16(n), nil
}

// validName reports whether s is a DNS name of letters, digits, hyphens
// and underscores (labels of 1-63, 253 in all).
func validName(s string) bool {
	if s == "" || len(s) > 253 {
		return false
	}
	for _, label := range strings.Split(s, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for _, c := range label {
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return false
			}
		}
	}
	return true
}

// NamePorts says whether name may be resolved for the sandbox, and to
// which ports its addresses are then open (nil: every port). Open mode
// resolves every name; allowlist only names a host entry matches.
func (p *Policy) NamePorts(name string) (ports []uint16, ok bool) {
	if p.Mode == ModeOpen {
		return nil, true
	}
	if p.Mode != ModeAllowlist {
		return nil, false
	}
	name = strings.ToLower(strings.TrimSuffix(name, "."))
	for _, e := range p.Entries {
		if e.Host == "" || !e.matches(name) {
			continue
		}
		if e.Port == 0 {
			return nil, true
		}
		ok = true
		if !slices.Contains(ports, e.Port) {
			ports = append(ports, e.Port)
		}
	}
	return ports, ok
}

func (e *Entry) matches(name string) bool {
	if e.Wildcard {
		return strings.HasSuffix(name, "."+e.Host)
	}
	return name == e.Host
}

// Reachable reports whether the policy may ever let a connection reach
// a: never an address of Never, and one of Blocked only if an address
// entry covers it.
func (p *Policy) Reachable(a netip.Addr) bool {
	for _, n := range Never {
		if n.Contains(a) || n.Contains(a.Unmap()) {
			return false
		}
	}
	for _, b := range Blocked {
		if b.Contains(a) || b.Contains(a.Unmap()) {
			return p.coversAny(a.Unmap())
		}
	}
	return true
}

// coversAny reports whether an address entry covers a, on any port.
func (p *Policy) coversAny(a netip.Addr) bool {
	for _, e := range p.Entries {
		if e.Host == "" && e.Prefix.Contains(a) {
			return true
		}
	}
	return false
}

// Allows reports whether the policy lets a connection to address a on
// port start (names aside: an address a DNS answer pinned is not known
// here).
func (p *Policy) Allows(a netip.Addr, port uint16) bool {
	a = a.Unmap()
	if !p.Reachable(a) {
		return false
	}
	for _, e := range p.Entries {
		if e.Host == "" && e.Prefix.Contains(a) && (e.Port == 0 || e.Port == port) {
			return true
		}
	}
	return p.Mode == ModeOpen && !p.blocked(a)
}

// blocked reports whether a is in Blocked.
func (p *Policy) blocked(a netip.Addr) bool {
	for _, b := range Blocked {
		if b.Contains(a) {
			return true
		}
	}
	return false
}
