package daemon

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"

	"github.com/sandboxd/sandboxd/isolation/netdns"
	"github.com/sandboxd/sandboxd/isolation/netpolicy"
	"github.com/sandboxd/sandboxd/isolation/network"
)

// validate checks the [network] table.
func (n *NetworkConfig) validate() error {
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
	if _, err := indexURL(n.PackageIndexURL); err != nil {
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
	if _, err := openHostNetworks(n.OpenHostNetworks); err != nil {
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

// hostResolvers are the nameservers of the host's /etc/resolv.conf.
func hostResolvers(path string) []string {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 2 && fields[0] == "nameserver" {
			if a, err := netip.ParseAddr(fields[1]); err == nil {
				out = append(out, netip.AddrPortFrom(a.WithZone(""), 53).String())
			}
		}
	}
	return out
}

// netDeps are the daemon's network machinery, or why it has none.
type netDeps struct {
	net   Network
	off   string
	table *netTable
	// close lets go of the DNS (the table and links stay for the
	// sandboxes left running).
	close func()
}

// openNetwork prepares networked sessions: the subnet lease, the DNS
// listeners, the nftables table and the DNS server. A host that cannot
// have them (a kernel without nftables, say) gets a daemon whose sessions
// can only have network "none", and a warning saying why.
func openNetwork(cfg Config, inst instance, m *metrics, log *slog.Logger) netDeps {
	nd := netDeps{table: newNetTable(), close: func() {}}
	if !cfg.Network.Enabled {
		nd.off = "networking is off on this host ([network] enabled = false)"
		return nd
	}
	if err := nd.open(cfg, inst, m, log); err != nil {
		nd.off = err.Error()
		log.Warn("sessions can have network \"none\" only", "problem", err)
	}
	return nd
}

func (nd *netDeps) open(cfg Config, inst instance, m *metrics, log *slog.Logger) (retErr error) {
	want := netip.MustParsePrefix(cfg.Network.Subnet)
	subnet, err := network.SubnetLease{Dir: cfg.Network.LeaseDir, Instance: inst.id, DataDir: cfg.DataDir,
		Want: want, Move: !cfg.Network.explicit}.Lease()
	if err != nil {
		return err
	}
	if subnet != want {
		log.Info("another sandboxd, or the host's network, has the configured subnet: this one uses the next free one", "subnet", subnet)
	}
	var subnet6 netip.Prefix
	if cfg.Network.Subnet6 != "" {
		subnet6 = netip.MustParsePrefix(cfg.Network.Subnet6)
	}
	udp, tcp, err := listenDNS(cfg.Network.DNSPort)
	if err != nil {
		return fmt.Errorf("DNS for sandboxes: %w", err)
	}
	defer func() {
		if retErr != nil {
			udp.Close()
			tcp.Close()
		}
	}()
	port := uint16(udp.LocalAddr().(*net.UDPAddr).Port)
	openNets, _ := openHostNetworks(cfg.Network.OpenHostNetworks) // checked with the config
	mgr, err := network.New(network.Config{
		Instance:         inst.id,
		Subnet:           subnet,
		Subnet6:          subnet6,
		DNSPort:          port,
		LeaseDir:         cfg.Network.LeaseDir,
		OpenHostNetworks: openNets,
	})
	if err != nil {
		return err
	}
	servers := cfg.Network.DNSServers
	if len(servers) == 0 {
		servers = hostResolvers("/etc/resolv.conf")
		if len(servers) == 0 {
			log.Warn("no DNS servers: [network] dns_servers is empty and so is the host's /etc/resolv.conf; sandboxes' names will not resolve")
		}
	}
	dns, err := netdns.New(netdns.Config{
		Upstreams: servers,
		Lookup:    nd.table.lookup,
		HostAddr:  mgr.IsHostAddr,
		Pin: func(ctx context.Context, session string, pins []netdns.Pin) error {
			for _, p := range pins {
				if err := mgr.Pin(session, p.Name, p.Addr, p.Ports, p.TTL); err != nil {
					return err
				}
			}
			return nil
		},
		Refused: func(session, name string, why netdns.Refusal, detail string) {
			m.countDNSRefused(session, why)
			if why != netdns.RefusedRate { // a flood: netdns logs it once a minute
				log.Debug("DNS query refused", "session", session, "name", name, "reason", why, "detail", detail)
			}
		},
		Rate:   cfg.Network.DNSQueriesPerS,
		Burst:  cfg.Network.DNSBurst,
		Logger: log,
	})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := dns.Serve(ctx, udp, tcp); err != nil && ctx.Err() == nil {
			log.Error("DNS for sandboxes stopped", "err", err)
		}
	}()
	nd.net = mgr
	nd.close = func() {
		cancel()
		_ = dns.Close()
		udp.Close()
		tcp.Close()
		<-done
	}
	log.Info("sandbox networks ready", "subnet", subnet, "subnet6", subnet6, "dns_port", port, "table", mgr.Table(), "dns_servers", servers)
	return nil
}

// listenDNS opens the DNS server's UDP and TCP sockets on the host, on
// one port (any free one for 0), on every address: the daemon's table lets
// only its sandboxes reach it.
func listenDNS(port int) (net.PacketConn, net.Listener, error) {
	var lastErr error
	for range 20 {
		udp, err := net.ListenPacket("udp", fmt.Sprintf(":%d", port))
		if err != nil {
			return nil, nil, err
		}
		p := udp.LocalAddr().(*net.UDPAddr).Port
		tcp, err := net.Listen("tcp", fmt.Sprintf(":%d", p))
		if err == nil {
			return udp, tcp, nil
		}
		udp.Close()
		lastErr = err
		if port != 0 {
			break
		}
	}
	return nil, nil, lastErr
}

// openHostNetworks parses [network] open_host_networks.
func openHostNetworks(cidrs []string) ([]netip.Prefix, error) {
	var ps []netip.Prefix
	for _, c := range cidrs {
		p, err := netip.ParsePrefix(c)
		if err != nil {
			return nil, fmt.Errorf("network.open_host_networks: %q is not a CIDR, such as 203.0.113.0/24", c)
		}
		ps = append(ps, p.Masked())
	}
	return ps, nil
}
