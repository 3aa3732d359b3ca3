package integration

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sandboxd/sandboxd/api"
)

// TestDNSRateLimit: a sandbox that floods its DNS gets its burst answered
// and REFUSED for the rest, at once; what it was refused is in its stats;
// the upstream sees no more than the limit lets through, and another
// session resolves all the while.
func TestDNSRateLimit(t *testing.T) {
	t.Parallel()
	hostOnly(t)
	const rate, burst, queries = 5, 10, 400
	f := newFakeNet(t)
	f.SetRecord("web.test", time.Minute, f.Web)
	d := startDaemon(t, fmt.Sprintf("[network]\nsubnet6 = %q\ndns_servers = [%q]\ndns_queries_per_s = %d\ndns_burst = %d\n",
		subnet6, f.DNS.String(), rate, burst))
	id := d.netSession(t, api.NetworkOpen)
	other := d.netSession(t, api.NetworkOpen)

	// Each query a new name, over UDP to the sandbox's resolver, one
	// after the other: prints answered, refused, lost and the seconds.
	e := d.py(t, id, fmt.Sprintf(`
import socket, struct, time
ns = [l.split()[1] for l in open("/etc/resolv.conf") if l.startswith("nameserver")][0]
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.settimeout(2)
counts = {"answered": 0, "refused": 0, "lost": 0}
start = time.time()
for i in range(%d):
    name = b"".join(bytes([len(p)]) + p for p in (b"flood-%%d" %% i, b"test")) + b"\0"
    s.sendto(struct.pack(">HHHHHH", i, 0x0100, 1, 0, 0, 0) + name + struct.pack(">HH", 1, 1), (ns, 53))
    try:
        r = s.recv(512)
    except OSError:
        counts["lost"] += 1
        continue
    counts["refused" if r[3] & 0xF == 5 else "answered"] += 1
print(counts["answered"], counts["refused"], counts["lost"], time.time() - start)
`, queries))
	if e.Status != api.StatusOK {
		t.Fatalf("flood: %+v %s", e.Error, e.Stderr)
	}
	fields := strings.Fields(e.Stdout)
	if len(fields) != 4 {
		t.Fatalf("flood printed %q", e.Stdout)
	}
	answered, _ := strconv.Atoi(fields[0])
	refused, _ := strconv.Atoi(fields[1])
	secs, _ := strconv.ParseFloat(fields[3], 64)
	most := burst + int(rate*(secs+1))
	t.Logf("a flood of %d queries in %.2fs: %d answered, %d refused, %s lost", queries, secs, answered, refused, fields[2])
	if answered > most || refused < queries-most-5 {
		t.Errorf("a flood of %d queries in %.1fs: %d answered, %d refused (lost %s); want at most %d answered", queries, secs, answered, refused, fields[2], most)
	}
	upstream := 0
	for _, q := range f.Queries() {
		if strings.HasPrefix(q, "flood-") {
			upstream++
		}
	}
	if upstream > most {
		t.Errorf("the upstream was asked %d of the flood's names, want at most %d", upstream, most)
	}
	// The other session is not held back by the flooder's bucket.
	expectProbe(t, d, other, "web.test", "ok:")

	st, err := d.c.Stats(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if st.DNSRateLimited < uint64(refused) || st.DNSRefused < st.DNSRateLimited {
		t.Errorf("stats: dns_refused %d, dns_rate_limited %d; the sandbox saw %d REFUSED", st.DNSRefused, st.DNSRateLimited, refused)
	}
	if st, err := d.c.Stats(context.Background(), other); err != nil || st.DNSRateLimited != 0 {
		t.Errorf("the other session's stats: %+v %v", st, err)
	}
}
