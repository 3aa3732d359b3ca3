package server

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/client"
	"github.com/sandboxd/sandboxd/internal/testutil"
)

// requests is sandboxd_http_requests_total of route and code.
func requests(t *testing.T, g prometheus.Gatherer, route string, code int) float64 {
	t.Helper()
	v, _ := testutil.Scrape(t, g, "sandboxd_http_requests_total", "route", route, "code", fmt.Sprint(code))
	return v
}

// waitRequests waits until route and code were counted want times: a
// request is counted as its handler returns, after the client has its
// answer.
func waitRequests(t *testing.T, g prometheus.Gatherer, route string, code int, want float64) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for requests(t, g, route, code) != want {
		if time.Now().After(deadline) {
			t.Fatalf("%s %d counted %v times, want %v", route, code, requests(t, g, route, code), want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestRequestMetrics: each request is counted once by its route (the
// router's pattern, never the path) and status, and timed; unknown paths
// are "other"; methods outside the standard ones are one label; a panic
// is a counted 500.
func TestRequestMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	panics := 0
	s := newTestServer(&fakeBackend{}, Options{Registerer: reg, OnPanic: func() { panics++ }}, io.Discard)
	for _, tc := range []struct {
		method, path, body string
		code               int
	}{
		{"GET", "/v1/info", "", 200},
		{"GET", "/v1/info", "", 200},
		{"GET", "/v1/sessions/s1", "", 200},
		{"GET", "/v1/sessions/nope", "", 404},
		{"GET", "/v9/nothing", "", 404},
		{"GET", "/v1/sessions/s1/nothing/at/all", "", 404},
		{"PATCH", "/v1/info", "", 405},
		{"BREW", "/v1/info", "", 405},
		{"POST", "/v1/sessions/s1/exec", `{"language":"python","code":"panic"}`, 500},
		{"GET", "/v1/info", "", 200}, // after a panic
	} {
		if w := do(s, tc.method, tc.path, tc.body); w.Code != tc.code {
			t.Fatalf("%s %s: %d, want %d", tc.method, tc.path, w.Code, tc.code)
		}
	}
	for _, tc := range []struct {
		route string
		code  int
		want  float64
	}{
		{"GET /v1/info", 200, 3},
		{"GET /v1/sessions/{id}", 200, 1},
		{"GET /v1/sessions/{id}", 404, 1},
		{"other", 404, 2},
		{"PATCH /v1/info", 405, 1},
		{"OTHER /v1/info", 405, 1},
		{"POST /v1/sessions/{id}/exec", 500, 1},
	} {
		if got := requests(t, reg, tc.route, tc.code); got != tc.want {
			t.Errorf("%s %d: %v, want %v", tc.route, tc.code, got, tc.want)
		}
	}
	if got, _ := testutil.Scrape(t, reg, "sandboxd_http_request_duration_seconds", "route", "GET /v1/info"); got != 3 {
		t.Errorf("GET /v1/info timed %v times", got)
	}
	if panics != 1 {
		t.Errorf("OnPanic called %d times", panics)
	}
	// No label holds a raw path or id.
	families, _ := reg.Gather()
	for _, f := range families {
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if strings.Contains(l.GetValue(), "s1") || strings.Contains(l.GetValue(), "nope") || strings.Contains(l.GetValue(), "BREW") {
					t.Errorf("label %s=%q", l.GetName(), l.GetValue())
				}
			}
		}
	}
	// A second server on the registry (a test's, a restart in process)
	// shares the series.
	s2 := newTestServer(&fakeBackend{}, Options{Registerer: reg}, io.Discard)
	do(s2, "GET", "/v1/info", "")
	if got := requests(t, reg, "GET /v1/info", 200); got != 4 {
		t.Errorf("second server: %v", got)
	}
}

// serveMetered serves b on a socket with its request metrics in a
// registry of its own.
func serveMetered(t *testing.T, b Backend) (*prometheus.Registry, *client.Client, string) {
	t.Helper()
	reg := prometheus.NewRegistry()
	_, c, sock := serveBackend(t, b, Options{Registerer: reg})
	return reg, c, sock
}

// TestStreamsCountedAtTheirEnd: a streamed execution and an event stream
// are counted once, when they end, and still stream through the
// counting writer (each line flushed as it comes).
func TestStreamsCountedAtTheirEnd(t *testing.T) {
	gate := make(chan struct{})
	b := enteringBackend{&fakeBackend{gate: gate, events: []api.SessionEvent{{SessionID: "s1", Action: api.ActionCreated}}}, make(chan struct{}, 1)}
	reg, c, _ := serveMetered(t, b)
	ctx := context.Background()
	var lines int
	if _, err := c.Exec(ctx, "s1", &api.ExecRequest{Language: "python", Code: "1"}, func(api.Event) { lines++ }); err != nil || lines != 1 {
		t.Fatalf("streamed exec: %d lines, %v", lines, err)
	}
	waitRequests(t, reg, "POST /v1/sessions/{id}/exec", 200, 1)

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	got := make(chan *api.SessionEvent, 1)
	done := make(chan error, 1)
	go func() {
		done <- c.Events(ctx, api.EventFilter{}, func(ev *api.SessionEvent) error {
			got <- ev
			return nil
		})
	}()
	// The stream is open, nothing sent yet: not counted until it ends.
	select {
	case <-b.entered:
	case <-time.After(10 * time.Second):
		t.Fatal("the event stream never started")
	}
	if n := requests(t, reg, "GET /v1/events", 200); n != 0 {
		t.Fatalf("an open stream counted %v", n)
	}
	close(gate)
	select {
	case ev := <-got:
		if ev.SessionID != "s1" {
			t.Fatalf("event %+v", ev)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no event through the counting writer")
	}
	cancel()
	<-done
	waitRequests(t, reg, "GET /v1/events", 200, 1)
}

// enteringBackend says when an event stream reached the backend.
type enteringBackend struct {
	*fakeBackend
	entered chan struct{}
}

func (b enteringBackend) Events(ctx context.Context, f api.EventFilter, send func(*api.SessionEvent) error) error {
	b.entered <- struct{}{}
	return b.fakeBackend.Events(ctx, f, send)
}

// meteredPortsFront is portsFront with request metrics: the proxy must
// still hijack through the counting writer.
func meteredPortsFront(t *testing.T) (*prometheus.Registry, string) {
	t.Helper()
	inside := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/ws" {
			c, rw, err := http.NewResponseController(w).Hijack()
			if err != nil {
				t.Error(err)
				return
			}
			defer c.Close()
			rw.WriteString("HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: test\r\n\r\n")
			rw.Flush()
			_, _ = io.Copy(c, rw)
			return
		}
		fmt.Fprintf(w, "%s %s", r.Method, r.URL.EscapedPath())
	}))
	t.Cleanup(inside.Close)
	reg := prometheus.NewRegistry()
	s := newTestServer(&fakeBackend{ports: map[int]string{8000: inside.Listener.Addr().String()}}, Options{Registerer: reg}, io.Discard)
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.Handler().ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), credKey{}, testCaller)))
	}))
	t.Cleanup(front.Close)
	return reg, front.URL
}

// TestPortProxyUpgradeCounted: an upgraded connection through the proxy
// works through the counting writer, and is counted once, as 101, when
// it closes.
func TestPortProxyUpgradeCounted(t *testing.T) {
	reg, front := meteredPortsFront(t)
	const route = "GET /v1/sessions/{id}/ports/{port}/{path...}"
	resp, err := http.Get(front + "/v1/sessions/s1/ports/8000/a/b")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != "GET /a/b" {
		t.Fatalf("proxied: %q", b)
	}
	waitRequests(t, reg, route, 200, 1)

	c, err := net.Dial("tcp", strings.TrimPrefix(front, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	fmt.Fprint(c, "GET /v1/sessions/s1/ports/8000/ws HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: test\r\n\r\n")
	br := bufio.NewReader(c)
	resp, err = http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("upgrade: %v %v", resp, err)
	}
	for _, msg := range []string{"ping", "pong"} {
		fmt.Fprint(c, msg)
		buf := make([]byte, len(msg))
		if _, err := io.ReadFull(br, buf); err != nil || string(buf) != msg {
			t.Fatalf("echo %q: %q %v", msg, buf, err)
		}
	}
	if n := requests(t, reg, route, http.StatusSwitchingProtocols); n != 0 {
		t.Fatalf("an open upgraded connection counted %v", n)
	}
	c.Close()
	waitRequests(t, reg, route, http.StatusSwitchingProtocols, 1)
}

// TestStatusWriterKeepsWhatTheWriterCan: through the counting writer a
// handler still flushes, hijacks and sets deadlines (http.ResponseController),
// and the status recorded is the one sent.
func TestStatusWriterKeepsWhatTheWriterCan(t *testing.T) {
	type seen struct {
		flushErr, hijackErr, deadlineErr error
		status                           int
	}
	results := make(chan seen, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sw := &statusWriter{ResponseWriter: w}
		rc := http.NewResponseController(sw)
		var s seen
		s.deadlineErr = rc.SetWriteDeadline(time.Now().Add(time.Minute))
		if r.URL.Path == "/hijack" {
			c, rw, err := rc.Hijack()
			s.hijackErr = err
			if err == nil {
				rw.WriteString("HTTP/1.1 204 No Content\r\n\r\n")
				rw.Flush()
				c.Close()
			}
		} else {
			sw.WriteHeader(http.StatusEarlyHints) // informational: not the status
			sw.WriteHeader(http.StatusAccepted)
			io.WriteString(sw, "x")
			s.flushErr = rc.Flush()
		}
		s.status = sw.status
		results <- s
	}))
	defer srv.Close()
	for _, tc := range []struct {
		path   string
		status int
	}{{"/flush", http.StatusAccepted}, {"/hijack", http.StatusSwitchingProtocols}} {
		resp, err := http.Get(srv.URL + tc.path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		s := <-results
		if s.flushErr != nil || s.hijackErr != nil || s.deadlineErr != nil || s.status != tc.status {
			t.Errorf("%s: %+v, want status %d and no errors", tc.path, s, tc.status)
		}
	}
	// A writer that cannot hijack says so through it, as it would alone.
	w := &statusWriter{ResponseWriter: httptest.NewRecorder()}
	if _, _, err := http.NewResponseController(w).Hijack(); err == nil || w.status != 0 {
		t.Errorf("hijack of a recorder: %v, status %d", err, w.status)
	}
	// A body with no status is an implicit 200.
	w = &statusWriter{ResponseWriter: httptest.NewRecorder()}
	io.Copy(w, strings.NewReader("body"))
	if w.status != http.StatusOK {
		t.Errorf("implicit status %d", w.status)
	}
}

// TestMetricsServer: metrics_addr's server answers GET /metrics (and HEAD)
// over TCP, 404 for any other path, 405 for another method, and stops on
// Shutdown.
func TestMetricsServer(t *testing.T) {
	l, err := ListenMetrics("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	m := NewMetricsServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "sandboxd_up 1\n")
	}), slog.New(slog.NewTextHandler(io.Discard, nil)))
	served := make(chan error, 1)
	go func() { served <- m.Serve(l) }()
	base := "http://" + l.Addr().String()
	for _, tc := range []struct {
		method, path string
		code         int
	}{
		{"GET", "/metrics", 200},
		{"HEAD", "/metrics", 200},
		{"POST", "/metrics", 405},
		{"GET", "/", 404},
		{"GET", "/v1/info", 404},
		{"GET", "/metrics/", 404},
		{"GET", "/metricsx", 404},
	} {
		req, _ := http.NewRequest(tc.method, base+tc.path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.code {
			t.Errorf("%s %s: %d, want %d", tc.method, tc.path, resp.StatusCode, tc.code)
		}
		if tc.code == 200 && tc.method == "GET" && string(body) != "sandboxd_up 1\n" {
			t.Errorf("GET /metrics: %q", body)
		}
	}
	// A taken port is an error that names the setting.
	if _, err := ListenMetrics(l.Addr().String()); err == nil || !strings.HasPrefix(err.Error(), "metrics_addr "+l.Addr().String()+": ") {
		t.Errorf("a taken port: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := m.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-served; err != nil {
		t.Fatalf("Serve after Shutdown: %v", err)
	}
	if c, err := net.DialTimeout("tcp", l.Addr().String(), time.Second); err == nil {
		c.Close()
		t.Fatal("the listener still accepts after Shutdown")
	}
}

// TestSocketMetricsWithRequests: the socket's GET /metrics shows the
// request metrics registered beside the daemon's own (one registry).
func TestSocketMetricsWithRequests(t *testing.T) {
	reg := prometheus.NewRegistry()
	h := promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
	sock := filepath.Join(t.TempDir(), "s.sock")
	l, err := Listen(sock, "")
	if err != nil {
		t.Fatal(err)
	}
	s := New(BackendsOf(&fakeBackend{}), Options{MaxRequestBytes: 1024, Metrics: h, Registerer: reg}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	go s.Serve(l)
	t.Cleanup(func() { s.Shutdown(context.Background()) })
	hc := unixHTTP(sock)
	for range 2 {
		resp, err := hc.Get("http://x/metrics")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("GET /metrics: %d", resp.StatusCode)
		}
		// The first scrape is counted as it ends: the second shows it.
		if strings.Contains(string(body), `sandboxd_http_requests_total{code="200",route="GET /metrics"} 1`) {
			return
		}
	}
	t.Fatal("the socket's scrape does not show the request metrics")
}
