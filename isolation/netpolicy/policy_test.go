package netpolicy

import (
	"net/netip"
	"slices"
	"strings"
	"testing"
)

func TestParseEntry(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Entry
		err  string
	}{
		{in: "PyPI.org.", want: Entry{Host: "pypi.org"}},
		{in: "*.github.com", want: Entry{Host: "github.com", Wildcard: true}},
		{in: "*.github.com:443", want: Entry{Host: "github.com", Wildcard: true, Port: 443}},
		{in: "example.com:80", want: Entry{Host: "example.com", Port: 80}},
		{in: "under_score.test", want: Entry{Host: "under_score.test"}},
		{in: "10.1.2.3", want: Entry{Prefix: netip.MustParsePrefix("10.1.2.3/32")}},
		{in: "10.1.2.3/8", want: Entry{Prefix: netip.MustParsePrefix("10.0.0.0/8")}},
		{in: "10.0.0.0/8:5432", want: Entry{Prefix: netip.MustParsePrefix("10.0.0.0/8"), Port: 5432}},
		{in: "2001:db8::/32", want: Entry{Prefix: netip.MustParsePrefix("2001:db8::/32")}},
		{in: "2001:db8::1", want: Entry{Prefix: netip.MustParsePrefix("2001:db8::1/128")}},
		{in: "[2001:db8::/32]:443", want: Entry{Prefix: netip.MustParsePrefix("2001:db8::/32"), Port: 443}},
		{in: "[2001:db8::1]", want: Entry{Prefix: netip.MustParsePrefix("2001:db8::1/128")}},
		{in: "::ffff:10.0.0.1", want: Entry{Prefix: netip.MustParsePrefix("10.0.0.1/32")}},
		{in: "169.254.169.254", err: "no policy may reach"},
		{in: "0.0.0.0/0", err: "no policy may reach"},
		{in: "::/0", err: "no policy may reach"},
		{in: "fd00:ec2::254", err: "no policy may reach"},
		{in: "169.254.0.0/16:80", err: "no policy may reach"},
		{in: "", err: "not an address"},
		{in: "exa mple.com", err: "not an address"},
		{in: "a..b", err: "not an address"},
		{in: "*.", err: "not an address"},
		{in: "x.*.com", err: "not an address"},
		{in: "-a.com", err: "not an address"},
		{in: strings.Repeat("a", 64) + ".com", err: "not an address"},
		{in: "example.com:0", err: "port"},
		{in: "example.com:65536", err: "port"},
		{in: "example.com:+80", err: "port"},
		{in: "example.com:http", err: "port"},
		{in: "[example.com]:80", err: "brackets are for IPv6"},
		{in: "[2001:db8::1", err: "no closing"},
		{in: "[2001:db8::1]x", err: "only :port"},
		{in: "10.0.0.0/33", err: "not an address"},
		{in: "fe80::1%eth0", err: "not an address"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseEntry(tc.in)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), `"`+tc.in+`"`) {
					t.Fatalf("got %+v, %v; want an error naming the entry with %q", got, err, tc.err)
				}
				return
			}
			tc.want.Raw = tc.in
			if err != nil || got != tc.want {
				t.Fatalf("got %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
}

func TestParse(t *testing.T) {
	if p, err := Parse("", nil); err != nil || p.Mode != ModeNone {
		t.Fatalf("empty mode: %+v %v", p, err)
	}
	for _, tc := range []struct {
		mode  string
		allow []string
	}{
		{"internet", nil},
		{ModeNone, []string{"example.com"}},
		{ModeAllowlist, []string{"ok.com", "bad entry"}},
		{ModeAllowlist, make([]string, MaxEntries+1)},
	} {
		if _, err := Parse(tc.mode, tc.allow); err == nil {
			t.Errorf("Parse(%q, %d entries) passed", tc.mode, len(tc.allow))
		}
	}
}

func TestNamePorts(t *testing.T) {
	p, err := Parse(ModeAllowlist, []string{"a.com", "*.b.com:443", "*.b.com:8443", "c.com:80", "c.com", "10.0.0.0/8"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		ports []uint16
		ok    bool
	}{
		{"a.com", nil, true},
		{"A.COM.", nil, true},
		{"x.a.com", nil, false},
		{"b.com", nil, false},
		{"x.b.com", []uint16{443, 8443}, true},
		{"y.x.b.com", []uint16{443, 8443}, true},
		{"c.com", nil, true}, // a portless entry opens every port
		{"10.0.0.1", nil, false},
		{"d.com", nil, false},
	} {
		ports, ok := p.NamePorts(tc.name)
		if ok != tc.ok || !slices.Equal(ports, tc.ports) {
			t.Errorf("NamePorts(%q) = %v %v, want %v %v", tc.name, ports, ok, tc.ports, tc.ok)
		}
	}
	open, _ := Parse(ModeOpen, nil)
	if ports, ok := open.NamePorts("anything.test"); !ok || ports != nil {
		t.Error("open mode does not resolve every name")
	}
	none, _ := Parse(ModeNone, nil)
	if _, ok := none.NamePorts("a.com"); ok {
		t.Error("none resolves names")
	}
}

func TestReachable(t *testing.T) {
	p, _ := Parse(ModeOpen, []string{"10.1.0.0/16", "[fd12::/16]:443"})
	for addr, want := range map[string]bool{
		"198.18.0.1": true, "2001:2::1": true, "93.184.216.34": true,
		"127.0.0.1": false, "10.2.0.1": false, "10.1.2.3": true,
		"169.254.169.254": false, "::ffff:169.254.169.254": false, "::ffff:127.0.0.1": false,
		"192.168.1.1": false, "100.64.0.1": false, "224.0.0.1": false,
		"::1": false, "fe80::1": false, "fd00:ec2::254": false, "fd12::1": true, "fd13::1": false,
		// IPv6 that embeds IPv4: NAT64, 6to4, Teredo.
		"64:ff9b::a9fe:a9fe": false, "64:ff9b::5db8:d822": false, "2002:a9fe:a9fe::1": false,
		"2002:5db8:d822::1": false, "2001:0:a9fe:a9fe::1": false,
	} {
		if got := p.Reachable(netip.MustParseAddr(addr)); got != want {
			t.Errorf("Reachable(%s) = %v", addr, got)
		}
	}
}

// TestEmbeddedIPv4: the IPv6 ranges that embed an IPv4 address are
// blocked in open mode, a CIDR of allow opens them but for the addresses
// that embed link-local IPv4 (metadata), which no entry may open.
func TestEmbeddedIPv4(t *testing.T) {
	open, _ := Parse(ModeOpen, nil)
	for _, a := range []string{"64:ff9b::a9fe:a9fe", "64:ff9b::808:808", "2002:a9fe:a9fe::1", "2001:0:4136:e378::1"} {
		if open.Allows(netip.MustParseAddr(a), 80) {
			t.Errorf("open allows %s", a)
		}
	}
	for _, e := range []string{"64:ff9b::/96", "64:ff9b::a9fe:a9fe", "2002::/16", "2002:a9fe::/32", "[64:ff9b::a9fe:a9fe]:80"} {
		if _, err := ParseEntry(e); err == nil {
			t.Errorf("entry %s opens link-local IPv4", e)
		}
	}
	p, err := Parse(ModeAllowlist, []string{"64:ff9b::808:808/128", "2002:808:808::/48"})
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range []string{"64:ff9b::808:808", "2002:808:808::1"} {
		if !p.Allows(netip.MustParseAddr(a), 443) {
			t.Errorf("a CIDR does not open %s", a)
		}
	}
}

// FuzzParseEntry: any input parses or errors, never panics, and a parsed
// entry parses again from its Raw to itself.
func FuzzParseEntry(f *testing.F) {
	for _, s := range []string{"example.com", "*.a.b:443", "10.0.0.0/8:22", "[2001:db8::/32]:443", "::ffff:1.2.3.4", "169.254.0.0/16", "a:b:c", "[x]"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		e, err := ParseEntry(s)
		if err != nil {
			return
		}
		again, err := ParseEntry(e.Raw)
		if err != nil || again != e {
			t.Fatalf("%q parsed to %+v, then %+v %v", s, e, again, err)
		}
		if e.Host == "" && !e.Prefix.IsValid() {
			t.Fatalf("%q: neither host nor prefix", s)
		}
		for _, n := range Never {
			if e.Prefix.IsValid() && e.Prefix.Overlaps(n) {
				t.Fatalf("%q opens %s", s, n)
			}
		}
	})
}
