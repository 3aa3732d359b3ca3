package config

import (
	"fmt"
	"net"
	"net/netip"
	"strconv"
)

// checkMetricsAddr checks metrics_addr is "" or HOST:PORT with HOST an IP
// address or localhost: a name would be resolved at every start, and an
// empty host (":9464") would open every interface without saying so.
func checkMetricsAddr(addr string) error {
	if addr == "" {
		return nil
	}
	bad := func(why string) error {
		return fmt.Errorf("metrics_addr %q is not an address to serve metrics on: %s (such as \"127.0.0.1:9464\"; \"\" turns it off)", addr, why)
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return bad("use HOST:PORT, an IPv6 host in brackets")
	}
	if n, err := strconv.ParseUint(port, 10, 16); err != nil || strconv.FormatUint(n, 10) != port {
		return bad("the port must be a number from 0 to 65535")
	}
	if host == "" {
		return bad("name the host: 127.0.0.1 for this host alone, 0.0.0.0 for every interface")
	}
	if _, err := netip.ParseAddr(host); err != nil && host != "localhost" {
		return bad("the host must be an IP address or localhost")
	}
	return nil
}
