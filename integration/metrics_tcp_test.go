package integration

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// freePort is a TCP port on loopback nothing listens on (a moment ago).
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// TestMetricsAddr: with metrics_addr set, a scraper on the host reads
// GET /metrics over TCP (the same registry as the socket's: the API's
// requests, sessions by runtime, pool hits), any other path is 404, and
// the listener goes with the daemon.
func TestMetricsAddr(t *testing.T) {
	t.Parallel()
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	d := startDaemon(t, fmt.Sprintf("metrics_addr = %q\npool_size = 1\n", addr))
	ctx := context.Background()
	waitFor(t, func() bool { return d.info(t).Pool.Idle == 1 })
	s, err := d.c.CreateSession(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	d.py(t, s.ID, "1 + 1")

	hc := &http.Client{Timeout: 10 * time.Second}
	get := func(path string) (int, string) {
		t.Helper()
		resp, err := hc.Get("http://" + addr + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	code, body := get("/metrics")
	if code != 200 {
		t.Fatalf("GET /metrics over TCP: %d\n%s", code, body)
	}
	for _, want := range []string{
		`sandboxd_http_requests_total{code="200",route="POST /v1/sessions/{id}/exec"} 1`,
		`sandboxd_http_requests_total{code="201",route="POST /v1/sessions"} 1`,
		`sandboxd_sessions_by_runtime{runtime="runc",status="running"} 1`,
		`sandboxd_pool_hits_total{template="python"} 1`,
		`sandboxd_pool_refill_duration_seconds_count{template="python"}`,
		`sandboxd_userns_id_blocks_in_use `,
		`sandboxd_session_end_reasons_total{reason="idle"} 0`,
		`sandboxd_execution_duration_seconds_bucket{language="python",le="0.0005"}`,
		"sandboxd_sessions{status=\"running\"} 1", // the old series, unchanged
	} {
		if !strings.Contains(body, want) {
			t.Errorf("the TCP scrape lacks %q", want)
		}
	}
	for _, path := range []string{"/", "/v1/info", "/v1/sessions", "/metrics/x"} {
		if code, _ := get(path); code != 404 {
			t.Errorf("GET %s over TCP: %d, want 404", path, code)
		}
	}
	if err := d.c.DeleteSession(ctx, s.ID); err != nil {
		t.Fatal(err)
	}
	if _, body := d.raw(t, "GET", "/metrics", ""); !strings.Contains(string(body), `sandboxd_session_end_reasons_total{reason="deleted"} 1`) {
		t.Errorf("the socket's scrape does not count the delete")
	}
	if !strings.Contains(d.log(), `"serving metrics"`) {
		t.Errorf("the daemon did not log the metrics address")
	}
	d.terminate()
	if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		c.Close()
		t.Fatal("metrics_addr still accepts after the daemon stopped")
	}
	d.launch() // for the cleanup's stop, and: the port is free again
	if code, _ := get("/metrics"); code != 200 {
		t.Fatalf("GET /metrics after a restart: %d", code)
	}
}
