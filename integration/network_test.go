package integration

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/nftables"

	"github.com/sandboxd/sandboxd/api"
)

// Networked sessions against a fake internet (fakenet_test.go): every
// address a test tries is loopback or inside the fixture's namespace, the
// blocked ones included (the metadata and private-range stand-ins are
// routed there), so a block that fails sends nothing off the host.

// subnet6 is the IPv6 /96 of the tests' daemons: a sandbox's address
// carries its (leased, unique) IPv4 address, so daemons can share it.
const subnet6 = "fd5b:d0c:5b0d::/96"

// hostOnly skips a network test in the VM (-short): the VM, emulated and
// slow, runs a smoke subset (none, allowlist with DNS and IPv6, restart
// and crash, the port proxy) under cgroup v2 and systemd; the host runs
// them all.
func hostOnly(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("network test of the host's run; the VM runs the smoke subset")
	}
}

// netDaemon starts a daemon whose sandboxes' DNS asks the fake internet.
func netDaemon(t testing.TB, f *fakeNet, extra string) *daemon {
	t.Helper()
	return startDaemon(t, extra+fmt.Sprintf("[network]\nsubnet6 = %q\ndns_servers = [%q]\n", subnet6, f.DNS.String()))
}

// netRuntimes is eachRuntime for the network tests: cfg, the body's first
// config lines, makes runsc the default on a runsc that can give sessions
// a network (make's RUNSC_NET: Debian 12's cannot run gVisor's netstack
// on Linux 6). In the VM (-short) runc alone.
func netRuntimes(t *testing.T, body func(t *testing.T, rt, cfg string)) {
	runtimes(t, !testing.Short(), func(t *testing.T, rt, cfg string) {
		if rt == api.RuntimeRunsc {
			cfg += fmt.Sprintf("[runsc]\npath = %q\n", runscNet(t))
		}
		body(t, rt, cfg)
	})
}

// runscNet is the runsc make builds for networked runsc sessions.
func runscNet(t testing.TB) string {
	t.Helper()
	p, err := filepath.Abs("../dist/runsc/runsc")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("no runsc for networked sessions (%v): make dist/runsc/runsc (make test does)", err)
	}
	return p
}

// probeCode defines probe() in a session's interpreter: it resolves a
// name (or takes an address), connects to port 80 and GETs /, and says
// "ok:<body>", "nxdomain" or "blocked:<error>".
const probeCode = `
import socket
def probe(target, port=80, timeout=3, family=0):
    try:
        infos = socket.getaddrinfo(target, port, family, socket.SOCK_STREAM)
    except socket.gaierror:
        return "nxdomain"
    last = None
    for fam, typ, proto, _, addr in infos:
        s = socket.socket(fam, typ)
        s.settimeout(timeout)
        try:
            s.connect(addr)
            s.sendall(b"GET / HTTP/1.0\r\nHost: x\r\n\r\n")
            data = b""
            while True:
                b = s.recv(65536)
                if not b:
                    break
                data += b
            return "ok:" + data.split(b"\r\n\r\n", 1)[-1].decode(errors="replace")
        except OSError as e:
            last = e
        finally:
            s.close()
    return "blocked:" + type(last).__name__
def own_addr(family=socket.AF_INET, dest="198.18.0.1"):
    s = socket.socket(family, socket.SOCK_DGRAM)
    s.connect((dest, 9))
    return s.getsockname()[0]
`

// probe runs probe(target) in session id.
func (d *daemon) probe(t *testing.T, id, target string) string {
	t.Helper()
	e := d.py(t, id, fmt.Sprintf("print(probe(%q))", target))
	if e.Status != api.StatusOK {
		t.Fatalf("probe %s: %s %+v %s", target, e.Status, e.Error, e.Stderr)
	}
	return strings.TrimSpace(e.Stdout)
}

func (d *daemon) netSession(t *testing.T, network string, allow ...string) string {
	t.Helper()
	id := d.session(t, &api.CreateSessionRequest{Network: network, Allow: allow})
	e := d.py(t, id, probeCode+"import os\nprint(os.uname().release)")
	if e.Status != api.StatusOK {
		t.Fatalf("define probe: %+v", e.Error)
	}
	// On the runtime netRuntimes asked for (gVisor reports its own kernel).
	if runsc := strings.Contains(d.config, `default_runtime = "runsc"`); runsc != isGvisorKernel(strings.TrimSpace(e.Stdout)) {
		t.Fatalf("session %s runs on kernel %s; on runsc: %v", id, e.Stdout, runsc)
	}
	return id
}

func expectProbe(t *testing.T, d *daemon, id, target, want string) {
	t.Helper()
	got := d.probe(t, id, target)
	if !strings.HasPrefix(got, want) {
		t.Errorf("probe(%s) = %q, want %s…", target, got, want)
	}
}

func TestNetworkNone(t *testing.T) {
	t.Parallel()
	netRuntimes(t, func(t *testing.T, rt, cfg string) {
		f := newFakeNet(t)
		f.SetRecord("web.test", time.Minute, f.Web)
		d := netDaemon(t, f, cfg)
		id := d.netSession(t, api.NetworkNone)
		expectProbe(t, d, id, "web.test", "nxdomain")
		expectProbe(t, d, id, f.Web.String(), "blocked")
		expectProbe(t, d, id, f.Web6.String(), "blocked")
		if q := f.Queries(); len(q) != 0 {
			t.Errorf("a session without network reached the DNS: %q", q)
		}
	})
}

func TestNetworkAllowlist(t *testing.T) {
	t.Parallel()
	f := newFakeNet(t)
	f.SetRecord("web.test", time.Minute, f.Web, f.Web6)
	f.SetRecord("other.test", time.Minute, f.Other)
	f.SetRecord("a.wild.test", time.Minute, f.Other)
	f.SetCNAME("alias.test", "web.test")
	f.SetRecord("rebind-local.test", time.Minute, netip.MustParseAddr("127.0.0.1"))
	f.SetRecord("rebind-host.test", time.Minute, f.HostAddr)
	f.SetRecord("rebind-meta.test", time.Minute, f.Metadata)
	f.SetRecord("rebind-private.test", time.Minute, f.Private)
	f.SetRecord("unlisted.test", time.Minute, f.Other)
	f.SetTXT("web.test", "tunnel")
	netRuntimes(t, func(t *testing.T, rt, cfg string) { testNetworkAllowlist(t, f, netDaemon(t, f, cfg)) })
}

func testNetworkAllowlist(t *testing.T, f *fakeNet, d *daemon) {
	id := d.netSession(t, api.NetworkAllowlist,
		"web.test", "alias.test", "*.wild.test", "rebind-local.test", "rebind-host.test", "rebind-meta.test", "rebind-private.test")

	// The same server by raw IP is blocked until its name resolved.
	expectProbe(t, d, id, f.Other.String(), "blocked")
	expectProbe(t, d, id, "web.test", "ok:")
	expectProbe(t, d, id, f.Web.String(), "ok:")
	expectProbe(t, d, id, f.Web6.String(), "ok:")
	expectProbe(t, d, id, "alias.test", "ok:")
	expectProbe(t, d, id, "a.wild.test", "ok:")
	// An unlisted name is NXDOMAIN and never leaves the host.
	expectProbe(t, d, id, "unlisted.test", "nxdomain")
	for _, q := range f.Queries() {
		if strings.HasPrefix(q, "unlisted.test") {
			t.Errorf("an unlisted name reached the upstream DNS")
		}
	}
	// Rebinding an allowed name to loopback, the host, metadata or a
	// private range gives no address.
	for _, name := range []string{"rebind-local.test", "rebind-host.test", "rebind-meta.test", "rebind-private.test"} {
		expectProbe(t, d, id, name, "nxdomain")
	}
	for _, a := range []netip.Addr{f.Metadata, f.Private, f.HostAddr} {
		expectProbe(t, d, id, a.String(), "blocked")
	}
	if n := f.Hits(f.Metadata) + f.Hits(f.Private); n != 0 {
		t.Errorf("the metadata or private stand-in got %d requests", n)
	}
	// DNS to another server goes to the daemon's all the same.
	e := d.py(t, id, fmt.Sprintf(`
import socket, struct
def query(server, name, qtype):
    q = struct.pack(">HHHHHH", 0x1234, 0x0100, 1, 0, 0, 0)
    for label in name.split("."):
        q += bytes([len(label)]) + label.encode()
    q += b"\0" + struct.pack(">HH", qtype, 1)
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.settimeout(3)
    s.sendto(q, (server, 53))
    r = s.recv(4096)
    return r[3] & 0x0f, struct.unpack(">H", r[6:8])[0]
print(query(%q, "unlisted.test", 1), query(%q, "web.test", 16))
`, f.DNS.Addr().String(), f.DNS.Addr().String()))
	// NXDOMAIN (3) for the unlisted name; no TXT answer (a DNS tunnel).
	if got := strings.TrimSpace(e.Stdout); got != "(3, 0) (0, 0)" {
		t.Errorf("direct DNS queries: %q %s", got, e.Stderr)
	}
	// DNS over TLS is refused, even to an allowed address.
	if _, err := d.c.SetNetwork(context.Background(), id, &api.NetworkRequest{Network: api.NetworkAllowlist, Allow: []string{f.Web.String()}}); err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(d.py(t, id, fmt.Sprintf("print(probe(%q, 853))", f.Web.String())).Stdout); !strings.HasPrefix(got, "blocked") {
		t.Errorf("DNS over TLS: %q", got)
	}
}

func TestNetworkOpen(t *testing.T) {
	t.Parallel()
	hostOnly(t)
	netRuntimes(t, func(t *testing.T, rt, cfg string) {
		f := newFakeNet(t)
		f.SetRecord("web.test", time.Minute, f.Web)
		f.SetRecord("rebind-meta.test", time.Minute, f.Metadata)
		d := netDaemon(t, f, cfg)
		id := d.netSession(t, api.NetworkOpen)
		other := d.netSession(t, api.NetworkOpen)
		expectProbe(t, d, id, "web.test", "ok:")
		expectProbe(t, d, id, f.Other.String(), "ok:")
		expectProbe(t, d, id, f.Web6.String(), "ok:")
		expectProbe(t, d, id, "rebind-meta.test", "nxdomain")
		// Never the host, another sandbox, metadata or a private range.
		d.py(t, other, "import threading, http.server\nsrv = http.server.HTTPServer(('0.0.0.0', 80), http.server.SimpleHTTPRequestHandler)\nthreading.Thread(target=srv.serve_forever, daemon=True).start()")
		otherAddr := strings.TrimSpace(d.py(t, other, "print(own_addr())").Stdout)
		gateway := strings.TrimSpace(d.py(t, id, "print('.'.join(own_addr().split('.')[:3]) + '.' + str(int(own_addr().split('.')[3]) - 1))").Stdout)
		for _, a := range []string{f.HostAddr.String(), gateway, otherAddr, f.Metadata.String(), f.Private.String()} {
			expectProbe(t, d, id, a, "blocked")
		}
		if n := f.Hits(f.Metadata) + f.Hits(f.Private); n != 0 {
			t.Errorf("the metadata or private stand-in got %d requests", n)
		}
		// A CIDR of allow opens a private range (not metadata: refused).
		s, err := d.c.SetNetwork(context.Background(), id, &api.NetworkRequest{Network: api.NetworkOpen, Allow: []string{f.Private.String() + "/32"}})
		if err != nil || s.Network != api.NetworkOpen {
			t.Fatalf("PATCH: %v", err)
		}
		expectProbe(t, d, id, f.Private.String(), "ok:")
		if _, err := d.c.SetNetwork(context.Background(), id, &api.NetworkRequest{Network: api.NetworkOpen, Allow: []string{"169.254.0.0/16"}}); err == nil {
			t.Fatal("metadata was allowed")
		}
	})
}

func TestNetworkPatchCutsConnections(t *testing.T) {
	t.Parallel()
	hostOnly(t)
	netRuntimes(t, func(t *testing.T, rt, cfg string) {
		f := newFakeNet(t)
		d := netDaemon(t, f, cfg)
		id := d.netSession(t, api.NetworkOpen)
		e := d.py(t, id, fmt.Sprintf(`
c = socket.create_connection((%q, 7), timeout=3)
c.sendall(b"one")
print(c.recv(10))`, f.Web.String()))
		if strings.TrimSpace(e.Stdout) != "b'one'" {
			t.Fatalf("echo: %q %s", e.Stdout, e.Stderr)
		}
		if _, err := d.c.SetNetwork(context.Background(), id, &api.NetworkRequest{Network: api.NetworkAllowlist, Allow: []string{f.Other.String()}}); err != nil {
			t.Fatal(err)
		}
		e = d.py(t, id, `
try:
    c.sendall(b"two")
    print(c.recv(10) or "closed")
except OSError as e:
    print("cut", type(e).__name__)`)
		if !strings.HasPrefix(strings.TrimSpace(e.Stdout), "cut") && strings.TrimSpace(e.Stdout) != "closed" {
			t.Errorf("a connection the new policy does not allow went on: %q", e.Stdout)
		}
		expectProbe(t, d, id, f.Other.String(), "ok:")
		expectProbe(t, d, id, f.Web.String(), "blocked")
	})
}

func TestNetworkSurvivesDaemonRestart(t *testing.T) {
	t.Parallel()
	netRuntimes(t, func(t *testing.T, rt, cfg string) {
		f := newFakeNet(t)
		f.SetRecord("web.test", time.Minute, f.Web)
		d := netDaemon(t, f, cfg)
		f.SetRecord("echo.test", time.Minute, f.Other)
		id := d.netSession(t, api.NetworkAllowlist, "web.test", "echo.test")
		expectProbe(t, d, id, "web.test", "ok:")
		// A connection open across the restarts carries on.
		if e := d.py(t, id, "held = socket.create_connection(('echo.test', 7), timeout=3)"); e.Status != api.StatusOK {
			t.Fatalf("connect: %+v %s", e.Error, e.Stderr)
		}
		for _, how := range daemonEnds {
			d.bounce(how)
			expectProbe(t, d, id, "web.test", "ok:")
			expectProbe(t, d, id, f.Web6.String(), "blocked")
			e := d.py(t, id, "held.sendall(b'"+how+"')\nprint(held.recv(16))")
			if got := strings.TrimSpace(e.Stdout); got != "b'"+how+"'" {
				t.Errorf("the held connection after a %s: %q %s", how, got, e.Stderr)
			}
		}
	})
}

func TestNetworkCyclesLeaveNothing(t *testing.T) {
	t.Parallel()
	hostOnly(t)
	netRuntimes(t, func(t *testing.T, rt, cfg string) {
		f := newFakeNet(t)
		d := netDaemon(t, f, cfg)
		inst := d.instance()
		ctx := context.Background()
		cycles := 200
		if rt == api.RuntimeRunsc {
			cycles = 20 // ~250 ms a cold start
		}
		for i := 0; i < cycles; i++ {
			s, err := d.c.CreateSession(ctx, &api.CreateSessionRequest{Network: api.NetworkOpen})
			if err != nil {
				t.Fatal(err)
			}
			if err := d.c.DeleteSession(ctx, s.ID); err != nil {
				t.Fatal(err)
			}
		}
		if l := ownLinks(t, inst); len(l) != 0 {
			t.Errorf("links left after %d cycles: %v", cycles, l)
		}
		if n := sessionChains(t, inst); n != 0 {
			t.Errorf("%d session chains left after %d cycles", n, cycles)
		}
		// A stopped session has nothing on the host either.
		s, err := d.c.CreateSession(ctx, &api.CreateSessionRequest{Network: api.NetworkOpen})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := d.c.StopSession(ctx, s.ID); err != nil {
			t.Fatal(err)
		}
		if l, n := ownLinks(t, inst), sessionChains(t, inst); len(l) != 0 || n != 0 {
			t.Errorf("a stopped session left links %v and %d chains", l, n)
		}
	})
}

// sessionChains counts the session chains in the daemon instance's table.
func sessionChains(t *testing.T, instance string) int {
	t.Helper()
	c, err := nftables.New()
	if err != nil {
		t.Fatal(err)
	}
	chains, err := c.ListChainsOfTableFamily(nftables.TableFamilyINet)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, ch := range chains {
		if ch.Table.Name == "sandboxd-"+instance && strings.HasPrefix(ch.Name, "s_") {
			n++
		}
	}
	return n
}

// TestNetworkAbuse: what code in a networked sandbox might try against its
// own policy, the host and other sessions.
func TestNetworkAbuse(t *testing.T) {
	t.Parallel()
	hostOnly(t)
	netRuntimes(t, func(t *testing.T, rt, cfg string) {
		f := newFakeNet(t)
		f.SetRecord("victim-only.test", time.Minute, f.Other)
		d := netDaemon(t, f, cfg)
		victim := d.netSession(t, api.NetworkAllowlist, "victim-only.test")
		id := d.netSession(t, api.NetworkAllowlist, f.Web.String())
		victimAddr := strings.TrimSpace(d.py(t, victim, "print(own_addr())").Stdout)
		for name, code := range map[string]string{
			"raw socket":    pyRefused("socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)"),
			"packet socket": pyRefused("socket.socket(socket.AF_PACKET, socket.SOCK_RAW)", "PermissionError", "OSError"),
			// Its own policy lives on the host; its namespace is not its to change.
			"address": pyRefused("import subprocess; subprocess.run(['ip', 'addr', 'add', '"+victimAddr+"/32', 'dev', 'eth0'], check=True, capture_output=True)", "subprocess.CalledProcessError", "FileNotFoundError"),
			"route":   pyRefused("import subprocess; subprocess.run(['ip', 'route', 'replace', 'default', 'dev', 'eth0'], check=True, capture_output=True)", "subprocess.CalledProcessError", "FileNotFoundError"),
			"link":    pyRefused("import subprocess; subprocess.run(['ip', 'link', 'set', 'eth0', 'down'], check=True, capture_output=True)", "subprocess.CalledProcessError", "FileNotFoundError"),
		} {
			if got := strings.TrimSpace(d.py(t, id, code).Stdout); got != "blocked" {
				t.Errorf("%s: %s", name, got)
			}
		}
		// A query sent from the victim's address (IP_FREEBIND needs no
		// capability) would resolve what the victim may: it is dropped before
		// the daemon's DNS sees it.
		e := d.py(t, id, fmt.Sprintf(`
import struct
q = struct.pack(">HHHHHH", 7, 0x0100, 1, 0, 0, 0) + b"\x0bvictim-only\x04test\x00" + struct.pack(">HH", 1, 1)
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.IPPROTO_IP, 15, 1)  # IP_FREEBIND
s.settimeout(2)
try:
    s.bind((%q, 0))
    s.sendto(q, (%q, 53))
    print("ANSWERED", s.recv(512))
except OSError as e:
    print("blocked", type(e).__name__)
`, victimAddr, f.DNS.Addr().String()))
		if !strings.HasPrefix(strings.TrimSpace(e.Stdout), "blocked") {
			t.Errorf("spoofed DNS query: %q %s", e.Stdout, e.Stderr)
		}
		if strings.Contains(strings.Join(f.Queries(), " "), "victim-only") {
			t.Error("a spoofed query reached the upstream DNS")
		}
		// A flood of UDP at the allowed server and at everything else: the
		// daemon and the other session carry on.
		flood := fmt.Sprintf(`
import time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
end, n = time.time() + 2, 0
while time.time() < end:
    for dst in ((%q, 9), (%q, 9), (%q, 53)):
        try:
            s.sendto(b"x" * 512, dst)
            n += 1
        except OSError:
            pass
print(n)`, f.Web.String(), f.HostAddr.String(), f.DNS.Addr().String())
		d.py(t, id, flood)
		if err := d.c.Health(context.Background()); err != nil {
			t.Fatalf("the daemon after a flood: %v", err)
		}
		expectProbe(t, d, victim, "victim-only.test", "ok:")
	})
}

func TestNetworkCaps(t *testing.T) {
	t.Parallel()
	hostOnly(t)
	f := newFakeNet(t)
	d := netDaemon(t, f, "")
	kbps, conns := 8000, 3
	id := d.session(t, &api.CreateSessionRequest{Network: api.NetworkOpen, EgressKbps: &kbps, MaxConnections: &conns})
	d.py(t, id, probeCode)

	// Connection 4 is refused while 3 are open; once one closes, it goes.
	e := d.py(t, id, fmt.Sprintf(`
held = [socket.create_connection((%[1]q, 7), timeout=3) for _ in range(3)]
def fourth():
    try:
        socket.create_connection((%[1]q, 7), timeout=3).close()
        return "connected"
    except OSError as e:
        return "refused " + type(e).__name__
print(fourth())
held.pop().close()
`, f.Web.String()))
	if got := strings.TrimSpace(e.Stdout); !strings.HasPrefix(got, "refused") {
		t.Errorf("connection 4 of 3: %q %s", got, e.Stderr)
	}
	if got := strings.TrimSpace(d.py(t, id, "import time\ntime.sleep(0.5)\nprint(fourth())").Stdout); got != "connected" {
		t.Errorf("a connection after one closed: %q", got)
	}
	d.py(t, id, "for c in held: c.close()")

	// The rate: what the fake internet receives of 5 s of sending, after
	// the first second (a token bucket starts full: a second's worth).
	// The held connections' conntrack entries leave the count once their
	// close is through (FIN both ways), which can take a moment on a
	// loaded host: until then a connection may be refused; try again.
	e = d.exec(t, id, api.LanguagePython, fmt.Sprintf(`
import time
give_up = time.time() + 10
while True:
    try:
        s = socket.create_connection((%q, 9), timeout=10)
        break
    except OSError:
        if time.time() > give_up:
            raise
        time.sleep(0.2)
chunk = b"x" * 65536
end = time.time() + 5
while time.time() < end:
    s.sendall(chunk)
s.close()
`, f.Web.String()), 40)
	if e.Error != nil {
		t.Fatalf("sending to the discard server: %s: %s", e.Error.Name, e.Error.Value)
	}
	deadline := time.Now().Add(10 * time.Second)
	for len(f.Received()) == 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	r := f.Received()
	if len(r) != 1 {
		t.Fatalf("discard server saw %d connections", len(r))
	}
	rate := r[0].steadyKbps()
	t.Logf("egress: %d bytes in %v, %d in the first second; after it %.0f kbit/s for a cap of %d", r[0].bytes, r[0].took, r[0].firstSecond, rate, kbps)
	if rate < 0.8*float64(kbps) || rate > 1.2*float64(kbps) {
		t.Errorf("egress rate %.0f kbit/s, cap %d (±20%%)", rate, kbps)
	}
}
