package daemon

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/containerd/errdefs"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/daemon/metrics"
	"github.com/sandboxd/sandboxd/daemon/server"
	"github.com/sandboxd/sandboxd/isolation/netdns"
)

// TestMetricsShowNoSession: /metrics, which every user of the socket (and
// anyone who reaches metrics_addr) reads, names no session: networked
// sessions of two owners, their DNS refusals and API requests on their
// ids leave no id in any label, and no label is per session. Each
// session's own figures are in its stats, for its owner alone.
func TestMetricsShowNoSession(t *testing.T) {
	e := newEnv(t, nil)
	d := e.start()
	member := as(1000)
	var ids []string
	for _, ctx := range []context.Context{root, member} {
		for _, network := range []string{api.NetworkOpen, api.NetworkAllowlist} {
			req := &api.CreateSessionRequest{Network: network}
			if network == api.NetworkAllowlist {
				req.Allow = []string{"example.com"}
			}
			s, err := d.CreateSession(ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, s.ID)
			// What the daemon's DNS tells of a refused query (netsetup.go).
			d.metrics.DNSRefused(s.ID, netdns.RefusedName)
			d.metrics.DNSRefused(s.ID, netdns.RefusedRate)
		}
	}

	// A member's pooled template: its name is the member's to see, and
	// its pool's series go under "users".
	size := 1
	if _, err := d.Templates().AddTemplate(member, &api.Template{Name: "alices-secret", PoolSize: &size}); err != nil {
		t.Fatal(err)
	}
	if _, err := d.CreateSession(member, &api.CreateSessionRequest{Template: "alices-secret"}); err != nil {
		t.Fatal(err)
	}

	// The socket's API, with its request metrics, and metrics_addr.
	sock := filepath.Join(t.TempDir(), "d.sock")
	l, err := server.Listen(sock, "")
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	srv := server.New(server.Backends{
		SystemBackend:   d,
		NodeBackend:     d.node,
		SessionBackend:  d,
		ExecBackend:     d,
		HistoryBackend:  d.History(),
		ProcessBackend:  d.Processes(),
		FileBackend:     d.Files(),
		TemplateBackend: d.Templates(),
		ContextBackend:  d.State().Contexts,
		VolumeBackend:   d.State().Volumes,
		SnapshotBackend: d.State().Snapshots,
		UndoBackend:     d.State().Undo,
	}, server.Options{MaxRequestBytes: 1 << 20, Metrics: d.Metrics().Handler(), OnPanic: d.Metrics().CountPanic, Registerer: d.Metrics().Registry()}, log)
	go srv.Serve(l)
	t.Cleanup(func() { _ = srv.Shutdown(context.Background()) })
	ml, err := server.ListenMetrics("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ms := server.NewMetricsServer(d.Metrics().Handler(), log)
	go ms.Serve(ml)
	t.Cleanup(func() { _ = ms.Shutdown(context.Background()) })
	unix := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var dl net.Dialer
		return dl.DialContext(ctx, "unix", sock)
	}}, Timeout: 10 * time.Second}
	t.Cleanup(unix.CloseIdleConnections)
	get := func(c *http.Client, url string) string {
		t.Helper()
		resp, err := c.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil || resp.StatusCode != http.StatusOK && !strings.Contains(url, "/v1/") {
			t.Fatalf("GET %s: %d %v", url, resp.StatusCode, err)
		}
		return string(b)
	}
	for _, id := range ids {
		get(unix, "http://sandboxd/v1/sessions/"+id)
		get(unix, "http://sandboxd/v1/sessions/"+id+"/stats")
		get(unix, "http://sandboxd/v1/sessions/"+id[:6]+"/nothing")
	}

	for where, body := range map[string]string{
		"socket":       get(unix, "http://sandboxd/metrics"),
		"metrics_addr": get(http.DefaultClient, "http://"+ml.Addr().String()+"/metrics"),
	} {
		for _, id := range ids {
			if strings.Contains(body, id[:12]) {
				t.Errorf("%s /metrics names session %s", where, id)
			}
		}
		if strings.Contains(body, "alices-secret") || !strings.Contains(body, `template="users"`) {
			t.Errorf("%s /metrics names a member's template, or has no users' pools", where)
		}
		for _, line := range strings.Split(body, "\n") {
			if strings.HasPrefix(line, "#") {
				continue
			}
			if strings.Contains(line, `session="`) || strings.Contains(line, `id="`) {
				t.Errorf("%s /metrics has a per-session series: %s", where, line)
			}
		}
		for _, want := range []string{
			`sandboxd_dns_refused_total{reason="rate"} 4`,
			`sandboxd_dns_refused_total{reason="name"} 4`,
			`sandboxd_dns_refused_total{reason="address"} 0`,
			"sandboxd_network_denied_packets_total 0",
		} {
			if !strings.Contains(body, want+"\n") {
				t.Errorf("%s /metrics lacks %q", where, want)
			}
		}
	}
	// No metric family has a label for a session, whatever its name.
	families, err := d.Metrics().Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			for _, lp := range m.GetLabel() {
				if n := lp.GetName(); n == "session" || n == "id" || n == "session_id" {
					t.Errorf("%s has label %s", f.GetName(), n)
				}
			}
		}
	}

	// Each session's own count is in its stats, for its owner alone.
	st, err := d.Stats(member, ids[2])
	if err != nil {
		t.Fatal(err)
	}
	if st.DNSRefused != 2 || st.DNSRateLimited != 1 {
		t.Errorf("member's stats: dns_refused %d, dns_rate_limited %d, want 2 and 1", st.DNSRefused, st.DNSRateLimited)
	}
	if _, err := d.Stats(member, ids[0]); !errdefs.IsNotFound(err) {
		t.Errorf("member reads root's stats: %v", err)
	}
	// The tally goes with the session; a query after its end adds none.
	if err := d.DeleteSession(member, ids[2]); err != nil {
		t.Fatal(err)
	}
	d.metrics.DNSRefused(ids[2], netdns.RefusedName)
	if n := d.metrics.DNSTally(ids[2]); n != (metrics.DNSTally{}) {
		t.Errorf("a deleted session's tally: %+v", n)
	}
}
