package config

import (
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"path/filepath"
	"strings"

	"github.com/sandboxd/sandboxd/isolation/netdns"
	"github.com/sandboxd/sandboxd/isolation/netpolicy"
)

// Network is the network of sessions whose policy is not "none"
// (see docs/network.md).
type Network struct {
	// Enabled allows network policies other than "none".
	Enabled bool `toml:"enabled"`
	// Subnet is the /16 of IPv4 sandbox addresses come from (a /30 each).
	// Several daemons on a host each lease their own in LeaseDir: one whose
	// config does not set it takes the next free /16 after the default.
	Subnet string `toml:"subnet"`
	// Subnet6, if set, is the /96 of IPv6 sandboxes get addresses from;
	// "" gives sandboxes no IPv6 at all (turning on IPv6 forwarding makes
	// a host ignore router advertisements, so it is the operator's call).
	Subnet6 string `toml:"subnet6"`
	// DNSServers are the resolvers the daemon's DNS asks for sandboxes
	// ("ADDR" or "ADDR:PORT"); empty: the host's /etc/resolv.conf.
	DNSServers []string `toml:"dns_servers"`
	// DNSPort is where the daemon's DNS listens on the host (0: a free
	// port); sandboxes' DNS to any address is sent there.
	DNSPort  int    `toml:"dns_port"`
	LeaseDir string `toml:"lease_dir"`
	// DNSQueriesPerS is how many DNS queries a second one session may
	// ask the daemon's DNS on average, DNSBurst how many at once; past
	// them its queries are answered REFUSED, and counted in its stats
	// (dns_rate_limited). 0: no limit.
	DNSQueriesPerS float64 `toml:"dns_queries_per_s"`
	DNSBurst       int     `toml:"dns_burst"`
	// OpenHostNetworks are networks the host is directly connected to
	// that policy open may reach all the same (CIDRs); by default open
	// reaches none of the host's networks, its own addresses nor its
	// gateways (docs/network.md).
	OpenHostNetworks []string `toml:"open_host_networks"`
	// PackageIndexURL is where POST …/packages installs from when the
	// request names no index; PackageHosts are the other hosts its
	// downloads come from (PyPI serves files from another name), opened
	// with it for the length of an install. PackageTimeoutS bounds one.
	PackageIndexURL string   `toml:"package_index_url"`
	PackageHosts    []string `toml:"package_hosts"`
	PackageTimeoutS int      `toml:"package_timeout_s"`
	// EgressKbps and MaxConnections are the caps of a networked session
	// that does not ask for its own (0: none).
	EgressKbps     int `toml:"egress_kbps"`
	MaxConnections int `toml:"max_connections"`
	// explicit says the config file set subnet.
	explicit bool
}

// SubnetSet says the file set subnet: the daemon leases that /16 and does
// not move to the next free one.
func (n Network) SubnetSet() bool { return n.explicit }

// validate checks the [network] table.
func (n *Network) validate() error {
	if !n.Enabled {
		return nil
	}
	var errs []error
	if p, err := netip.ParsePrefix(n.Subnet); err != nil || !p.Addr().Is4() || p.Bits() != 16 {
		errs = append(errs, fmt.Errorf("network.subnet %q must be an IPv4 /16, such as 10.87.0.0/16", n.Subnet))
	}
	if n.Subnet6 != "" {
		if p, err := netip.ParsePrefix(n.Subnet6); err != nil || !p.Addr().Is6() || p.Addr().Is4In6() || p.Bits() != 96 {
			errs = append(errs, fmt.Errorf("network.subnet6 %q must be an IPv6 /96, such as fd5b:d0c:5b0d::/96, or \"\" for no IPv6", n.Subnet6))
		}
	}
	for _, s := range n.DNSServers {
		if _, err := netdns.ParseUpstream(s); err != nil {
			errs = append(errs, fmt.Errorf("network.dns_servers: %w", err))
		}
	}
	if _, err := ParseIndexURL(n.PackageIndexURL); err != nil {
		errs = append(errs, fmt.Errorf("network.package_index_url: %w", err))
	}
	for _, h := range n.PackageHosts {
		if _, err := netpolicy.ParseEntry(h); err != nil {
			errs = append(errs, fmt.Errorf("network.package_hosts: %w", err))
		}
	}
	if n.PackageTimeoutS <= 0 {
		errs = append(errs, fmt.Errorf("network.package_timeout_s must be above 0"))
	}
	if n.EgressKbps < 0 || n.MaxConnections < 0 {
		errs = append(errs, fmt.Errorf("network.egress_kbps and network.max_connections must be 0 (no cap) or more"))
	}
	if n.DNSQueriesPerS < 0 || n.DNSBurst < 0 || (n.DNSQueriesPerS > 0 && n.DNSBurst == 0) {
		errs = append(errs, fmt.Errorf("network.dns_queries_per_s must be 0 (no limit) or more, and network.dns_burst 1 or more when it is not 0"))
	}
	if _, err := n.OpenHostPrefixes(); err != nil {
		errs = append(errs, err)
	}
	if n.DNSPort < 0 || n.DNSPort > 65535 {
		errs = append(errs, fmt.Errorf("network.dns_port must be between 0 (a free port) and 65535"))
	}
	if !filepath.IsAbs(n.LeaseDir) {
		errs = append(errs, fmt.Errorf("network.lease_dir must be an absolute path"))
	}
	return errors.Join(errs...)
}

// OpenHostPrefixes are open_host_networks, masked.
func (n *Network) OpenHostPrefixes() ([]netip.Prefix, error) {
	var ps []netip.Prefix
	for _, c := range n.OpenHostNetworks {
		p, err := netip.ParsePrefix(c)
		if err != nil {
			return nil, fmt.Errorf("network.open_host_networks: %q is not a CIDR, such as 203.0.113.0/24", c)
		}
		ps = append(ps, p.Masked())
	}
	return ps, nil
}

// ParseIndexURL checks a package index URL, the config's
// package_index_url and a request's index_url alike: http or https, a
// host, nothing that would leave the URL on pip's command line.
func ParseIndexURL(s string) (*url.URL, error) {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || strings.ContainsAny(s, "'\" \n") {
		return nil, fmt.Errorf("%q is not an http or https URL of a package index", s)
	}
	return u, nil
}
