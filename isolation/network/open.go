package network

import (
	"bufio"
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"strings"

	"github.com/sandboxd/sandboxd/isolation/netdns"
)

// ServiceConfig is what Open needs: the daemon's [network] settings.
type ServiceConfig struct {
	// Instance is the daemon's instance id; DataDir its data folder (a
	// subnet lease names it).
	Instance, DataDir string
	// Subnet is the IPv4 block wanted; with MoveSubnet, the next free one
	// is leased when another daemon, or the host's network, has it.
	Subnet     netip.Prefix
	MoveSubnet bool
	// Subnet6, if valid, is the IPv6 /96 (Config.Subnet6).
	Subnet6 netip.Prefix
	// LeaseDir is where subnets are leased.
	LeaseDir string
	// OpenHostNetworks: see Config.
	OpenHostNetworks []netip.Prefix
	// DNSPort is the DNS server's port on the host (0: any free one).
	DNSPort int
	// DNSServers are the upstreams (empty: the host's /etc/resolv.conf's).
	DNSServers []string
	// DNSRate and DNSBurst cap one session's queries (netdns.Config).
	DNSRate  float64
	DNSBurst int
	// Refused, if set, is told of each refused query, for a metric.
	Refused func(session string, why netdns.Refusal)
	Logger  *slog.Logger
}

// Open prepares networked sessions: the subnet lease, the DNS listeners,
// the nftables table and the DNS server, which serves until Close.
func Open(cfg ServiceConfig) (_ *Service, retErr error) {
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	subnet, err := SubnetLease{Dir: cfg.LeaseDir, Instance: cfg.Instance, DataDir: cfg.DataDir,
		Want: cfg.Subnet, Move: cfg.MoveSubnet}.Lease()
	if err != nil {
		return nil, err
	}
	if subnet != cfg.Subnet {
		log.Info("another sandboxd, or the host's network, has the configured subnet: this one uses the next free one", "subnet", subnet)
	}
	udp, tcp, err := listenDNS(cfg.DNSPort)
	if err != nil {
		return nil, fmt.Errorf("DNS for sandboxes: %w", err)
	}
	defer func() {
		if retErr != nil {
			udp.Close()
			tcp.Close()
		}
	}()
	port := uint16(udp.LocalAddr().(*net.UDPAddr).Port)
	mgr, err := New(Config{
		Instance:         cfg.Instance,
		Subnet:           subnet,
		Subnet6:          cfg.Subnet6,
		DNSPort:          port,
		LeaseDir:         cfg.LeaseDir,
		OpenHostNetworks: cfg.OpenHostNetworks,
	})
	if err != nil {
		return nil, err
	}
	servers := cfg.DNSServers
	if len(servers) == 0 {
		servers = hostResolvers("/etc/resolv.conf")
		if len(servers) == 0 {
			log.Warn("no DNS servers: [network] dns_servers is empty and so is the host's /etc/resolv.conf; sandboxes' names will not resolve")
		}
	}
	s := &Service{mgr: mgr, t: newSlotTable(), log: log}
	dns, err := netdns.New(netdns.Config{
		Upstreams: servers,
		Lookup:    s.t.lookup,
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
			if cfg.Refused != nil {
				cfg.Refused(session, why)
			}
			if why != netdns.RefusedRate { // a flood: netdns logs it once a minute
				log.Debug("DNS query refused", "session", session, "name", name, "reason", why, "detail", detail)
			}
		},
		Rate:   cfg.DNSRate,
		Burst:  cfg.DNSBurst,
		Logger: log,
	})
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := dns.Serve(ctx, udp, tcp); err != nil && ctx.Err() == nil {
			log.Error("DNS for sandboxes stopped", "err", err)
		}
	}()
	s.stopDNS = func() {
		cancel()
		_ = dns.Close()
		udp.Close()
		tcp.Close()
		<-done
	}
	log.Info("sandbox networks ready", "subnet", subnet, "subnet6", cfg.Subnet6, "dns_port", port, "table", mgr.Table(), "dns_servers", servers)
	return s, nil
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
