package main

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/sandboxd/sandboxd/e2b"
	"github.com/sandboxd/sandboxd/e2b/keys"
	"github.com/sandboxd/sandboxd/internal/hostcheck"
)

// noDaemon is a daemon the probe must never reach: a key-less request is
// refused before the gateway asks it anything.
type noDaemon struct{ e2b.Daemon }

// realGateway serves e2b's own gateway on loopback.
func realGateway(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ks, err := keys.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	g, err := e2b.New(e2b.Options{Daemon: noDaemon{}, Keys: ks, ID: e2b.Identity{ID: "t", Secret: strings.Repeat("s", 32)}, Listen: l.Addr().String()})
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: g}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return l.Addr().String()
}

func TestE2BAnswers(t *testing.T) {
	t.Parallel()
	addr := realGateway(t)
	if err := e2bAnswers(context.Background(), addr); err != nil {
		t.Fatalf("the gateway: %v", err)
	}
	// Listening on every address: asked on loopback.
	_, port, _ := net.SplitHostPort(addr)
	if err := e2bAnswers(context.Background(), "0.0.0.0:"+port); err != nil {
		t.Fatalf("the gateway as 0.0.0.0: %v", err)
	}
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("[]")) }))
	defer other.Close()
	if err := e2bAnswers(context.Background(), strings.TrimPrefix(other.URL, "http://")); err == nil {
		t.Fatal("another HTTP server passed as the gateway")
	}
}

func TestE2BGatewayDoctor(t *testing.T) {
	t.Setenv(e2bListenEnv, "")
	up := func(context.Context, string) error { return nil }
	down := func(context.Context, string) error { return errors.New("connection refused") }
	unit := func(load, file, active string) func() (map[string]string, error) {
		return func() (map[string]string, error) {
			return map[string]string{"LoadState": load, "UnitFileState": file, "ActiveState": active}, nil
		}
	}
	noSystemd := func() (map[string]string, error) { return nil, nil }
	env := func(m map[string]string) func() (map[string]string, error) {
		return func() (map[string]string, error) { return m, nil }
	}
	keyCount := func(n int, err error) func() (int, error) { return func() (int, error) { return n, err } }
	for _, tc := range []struct {
		name   string
		p      e2bProbes
		listen string
		status hostcheck.Status
		want   []string
		asked  string
	}{
		{name: "not installed", p: e2bProbes{Unit: unit("not-found", "", "inactive"), Answer: down},
			status: hostcheck.Info, want: []string{"no sandboxd-e2b.service (optional)", "no gateway to ask"}},
		{name: "installed, off", p: e2bProbes{Unit: unit("loaded", "disabled", "inactive"), Answer: down},
			status: hostcheck.Info, want: []string{"installed, off", "systemctl enable --now sandboxd-e2b"}},
		{name: "no systemd", p: e2bProbes{Unit: noSystemd, Answer: down},
			status: hostcheck.Info, want: []string{"no systemd", "--e2b-listen"}},
		{name: "enabled, failed", p: e2bProbes{Unit: unit("loaded", "enabled", "failed"), Answer: down},
			status: hostcheck.Warn, want: []string{"enabled but failed", "journalctl"}},
		{name: "active, answering at the env file's address", p: e2bProbes{Unit: unit("loaded", "enabled", "active"), Env: env(map[string]string{e2bListenEnv: "127.0.0.1:3999"}), Answer: up, Keys: keyCount(2, nil)},
			status: hostcheck.OK, want: []string{"active", "answering at 127.0.0.1:3999", "2 API key(s)"}, asked: "127.0.0.1:3999"},
		{name: "active, default address, keys unreadable", p: e2bProbes{Unit: unit("loaded", "enabled", "active"), Env: env(nil), Answer: up, Keys: keyCount(0, errors.New("permission denied"))},
			status: hostcheck.OK, want: []string{"answering at " + e2bListenDflt}, asked: e2bListenDflt},
		{name: "active, no keys", p: e2bProbes{Unit: unit("loaded", "enabled", "active"), Env: env(nil), Answer: up, Keys: keyCount(0, nil)},
			status: hostcheck.Warn, want: []string{"no API keys yet", "sudo -u sandboxd-e2b sandboxctl e2b key create"}},
		{name: "active, not answering", p: e2bProbes{Unit: unit("loaded", "enabled", "active"), Env: env(nil), Answer: down},
			status: hostcheck.Warn, want: []string{"nothing answers as the gateway at " + e2bListenDflt, "connection refused"}},
		{name: "by hand, --e2b-listen", p: e2bProbes{Unit: noSystemd, Answer: up}, listen: "127.0.0.1:4000",
			status: hostcheck.OK, want: []string{"no systemd", "answering at 127.0.0.1:4000"}, asked: "127.0.0.1:4000"},
		{name: "systemctl fails", p: e2bProbes{Unit: func() (map[string]string, error) { return nil, errors.New("exit status 1") }},
			status: hostcheck.Warn, want: []string{"cannot ask systemd"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var asked string
			if answer := tc.p.Answer; answer != nil {
				tc.p.Answer = func(ctx context.Context, addr string) error { asked = addr; return answer(ctx, addr) }
			}
			r := e2bGateway(context.Background(), tc.p, tc.listen)
			if r.Status != tc.status {
				t.Errorf("status %s, want %s (%s)", r.Status, tc.status, r.Detail)
			}
			for _, w := range tc.want {
				if !strings.Contains(r.Detail, w) {
					t.Errorf("detail %q lacks %q", r.Detail, w)
				}
			}
			if tc.asked != "" && asked != tc.asked {
				t.Errorf("asked %q, want %q", asked, tc.asked)
			}
		})
	}
}

func TestParseEnv(t *testing.T) {
	t.Parallel()
	m := parseEnv("# comment\n\nSANDBOXD_E2B_LISTEN=\"0.0.0.0:3000\"\n ; other\nSANDBOXD_E2B_OPTS=--network open\nbad line\n")
	if m[e2bListenEnv] != "0.0.0.0:3000" || m["SANDBOXD_E2B_OPTS"] != "--network open" || len(m) != 2 {
		t.Fatalf("parseEnv = %v", m)
	}
}
