package integration

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sandboxd/sandboxd/api"
)

// Network benchmarks (make bench), each beside its baseline in the same
// run: a create with a network beside one without, from the same daemon,
// in turns (so both meet the same host); DNS through the daemon beside
// DNS straight to the upstream; a sandbox's TCP throughput to the fake
// internet beside the host's.

func BenchmarkCreateSessionNetwork(b *testing.B)       { benchCreateNet(b, 0) }
func BenchmarkCreateSessionNetworkPooled(b *testing.B) { benchCreateNet(b, 2) }

// benchCreateNet times creates with network open and, in turns with them,
// creates without: p50-ms is the first's, base-p50-ms the second's,
// extra-ms the median of what each create with a network took over the
// one without just before it.
func benchCreateNet(b *testing.B, poolSize int) {
	f := newFakeNet(b)
	d := netDaemon(b, f, fmt.Sprintf("pool_size = %d\n", poolSize))
	ctx := context.Background()
	create := func(network string) time.Duration {
		d.waitPool(b)
		start := time.Now()
		s, err := d.c.CreateSession(ctx, &api.CreateSessionRequest{Network: network})
		took := time.Since(start)
		if err != nil {
			b.Fatal(err)
		}
		if err := d.c.DeleteSession(ctx, s.ID); err != nil {
			b.Fatal(err)
		}
		return took
	}
	var with, without, extra []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		base := create(api.NetworkNone)
		net := create(api.NetworkOpen)
		with, without, extra = append(with, net), append(without, base), append(extra, net-base)
	}
	b.StopTimer()
	report(b, with)
	b.ReportMetric(median(without), "base-p50-ms")
	b.ReportMetric(median(extra), "extra-ms")
}

// median of d, in milliseconds.
func median(d []time.Duration) float64 {
	slices.Sort(d)
	return float64(d[len(d)/2].Microseconds()) / 1000
}

// dnsLoop is Python that times n A queries of name to server:port, and
// prints the mean in microseconds.
const dnsLoop = `
import socket, struct, time
def dns_mean(server, port, name, n):
    q = struct.pack(">HHHHHH", 1, 0x0100, 1, 0, 0, 0)
    for label in name.split("."):
        q += bytes([len(label)]) + label.encode()
    q += b"\0" + struct.pack(">HH", 1, 1)
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.settimeout(3)
    start = time.perf_counter()
    for _ in range(n):
        s.sendto(q, (server, port))
        r = s.recv(512)
        if r[3] & 15 != 0:
            raise Exception("rcode %d" % (r[3] & 15))
    return (time.perf_counter() - start) / n * 1e6
`

func BenchmarkDNSThroughDaemon(b *testing.B) { benchDNS(b, true) }
func BenchmarkDNSDirect(b *testing.B)        { benchDNS(b, false) }

// benchDNS times queries from inside a sandbox: through the daemon's DNS
// (which checks the policy, asks the upstream and pins the answer), or
// straight to the upstream on a port the daemon does not redirect.
func benchDNS(b *testing.B, throughDaemon bool) {
	f := newFakeNet(b)
	f.SetRecord("web.test", time.Hour, f.Web)
	// The per-session rate limit off: the loop asks as fast as it can.
	d := startDaemon(b, fmt.Sprintf("[network]\nsubnet6 = %q\ndns_servers = [%q]\ndns_queries_per_s = 0\n", subnet6, f.DNS.String()))
	id := d.session(b, &api.CreateSessionRequest{Network: api.NetworkOpen})
	d.exec(b, id, api.LanguagePython, dnsLoop, 0)
	server, port := "169.254.0.53", 53
	if !throughDaemon {
		server, port = f.DNS.Addr().String(), 5353
	}
	const perIter = 200
	var total float64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		e := d.exec(b, id, api.LanguagePython, fmt.Sprintf("print(dns_mean(%q, %d, 'web.test', %d))", server, port, perIter), 60)
		us, err := strconv.ParseFloat(strings.TrimSpace(e.Stdout), 64)
		if err != nil {
			b.Fatalf("%q %s", e.Stdout, e.Stderr)
		}
		total += us
	}
	b.ReportMetric(total/float64(b.N), "us/query")
}

const sendMB = 64

func BenchmarkThroughputSandbox(b *testing.B) {
	f := newFakeNet(b)
	d := netDaemon(b, f, "")
	id := d.session(b, &api.CreateSessionRequest{Network: api.NetworkOpen})
	code := fmt.Sprintf(`
import socket
s = socket.create_connection((%q, 9), timeout=30)
chunk = b"x" * (1 << 20)
for _ in range(%d):
    s.sendall(chunk)
s.close()`, f.Web.String(), sendMB)
	benchThroughput(b, f, func() {
		if e := d.exec(b, id, api.LanguagePython, code, 120); e.Status != api.StatusOK {
			b.Fatalf("send: %+v %s", e.Error, e.Stderr)
		}
	})
}

func BenchmarkThroughputHost(b *testing.B) {
	f := newFakeNet(b)
	chunk := make([]byte, 1<<20)
	benchThroughput(b, f, func() {
		c, err := net.Dial("tcp", net.JoinHostPort(f.Web.String(), "9"))
		if err != nil {
			b.Fatal(err)
		}
		for range sendMB {
			if _, err := c.Write(chunk); err != nil {
				b.Fatal(err)
			}
		}
		c.Close()
	})
}

// benchThroughput sends sendMB MiB per iteration and reports the rate
// the fake internet received them at.
func benchThroughput(b *testing.B, f *fakeNet, send func()) {
	var rate float64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		before := len(f.Received())
		send()
		deadline := time.Now().Add(30 * time.Second)
		for len(f.Received()) == before && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		r := f.Received()
		if len(r) == before {
			b.Fatal("the discard server saw no connection end")
		}
		last := r[len(r)-1]
		rate += float64(last.bytes) / (1 << 20) / last.took.Seconds()
	}
	b.ReportMetric(rate/float64(b.N), "MiB/s")
}
