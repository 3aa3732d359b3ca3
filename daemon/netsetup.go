package daemon

import (
	"bufio"
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"strings"

	"github.com/sandboxd/sandboxd/daemon/config"
	"github.com/sandboxd/sandboxd/daemon/metrics"
	"github.com/sandboxd/sandboxd/isolation/netdns"
	"github.com/sandboxd/sandboxd/isolation/network"
)

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
func openNetwork(cfg config.Config, inst instance, m *metrics.Metrics, log *slog.Logger) netDeps {
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

func (nd *netDeps) open(cfg config.Config, inst instance, m *metrics.Metrics, log *slog.Logger) (retErr error) {
	want := netip.MustParsePrefix(cfg.Network.Subnet)
	subnet, err := network.SubnetLease{Dir: cfg.Network.LeaseDir, Instance: inst.id, DataDir: cfg.DataDir,
		Want: want, Move: !cfg.Network.SubnetSet()}.Lease()
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
	openNets, _ := cfg.Network.OpenHostPrefixes() // checked with the config
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
			m.DNSRefused(session, why)
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
