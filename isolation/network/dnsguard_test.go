package network

import (
	"io"
	"net"
	"net/netip"
	"testing"
	"time"
)

// TestDNSPortGuard checks what the input chain's guard of the DNS port
// stops: a new connection from off the host, and nothing of the host's
// own. The table outlives a stopped daemon, and then another program may
// have the port: a loopback server, or its own connections' local port
// (CI once lost loopback packets to the tables of daemons tests had
// killed, which dropped everything to their port).
func TestDNSPortGuard(t *testing.T) {
	l, err := net.Listen("tcp", ":0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			// The client closes first: TIME_WAIT stays on its side, not
			// on the port the test binds to next.
			go func() { _, _ = io.Copy(io.Discard, c); c.Close() }()
		}
	}()
	p := uint16(l.Addr().(*net.TCPAddr).Port)
	testManagerDNS(t, false, p)
	o := newOutside(t)

	c, err := net.DialTimeout("tcp", netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), p).String(), 2*time.Second)
	if err != nil {
		t.Errorf("a loopback connection to the DNS port: %v", err)
	} else {
		c.Close()
	}
	if c, err := dialIn(o.ns, netip.AddrPortFrom(o.gw, p)); err == nil {
		c.Close()
		t.Errorf("a connection from off the host reached the DNS port")
	}

	// The daemon is gone; a program's connection out from the port gets
	// its answers.
	l.Close()
	d := net.Dialer{Timeout: 2 * time.Second, LocalAddr: &net.TCPAddr{Port: int(p)}}
	c, err = d.Dial("tcp", netip.AddrPortFrom(o.addr, 80).String())
	if err != nil {
		t.Fatalf("a connection out from the DNS port: %v", err)
	}
	if body, err := fetch(c); err != nil || body != "outside" {
		t.Errorf("a connection out from the DNS port: %q %v", body, err)
	}
}
