package daemon

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/containerd/errdefs"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/daemon/config"
	"github.com/sandboxd/sandboxd/daemon/metrics"
	"github.com/sandboxd/sandboxd/internal/testutil"
	"github.com/sandboxd/sandboxd/isolation/netpolicy"
)

func TestNetworkSession(t *testing.T) {
	e := newEnv(t, func(c *config.Config) { c.PoolSize = 1 })
	d := e.start()
	allow := []string{"example.com", "*.github.com:443", "10.1.0.0/16:5432"}
	s, err := d.CreateSession(root, &api.CreateSessionRequest{Network: api.NetworkAllowlist, Allow: allow})
	if err != nil {
		t.Fatal(err)
	}
	if s.Network != api.NetworkAllowlist || !slices.Equal(s.Allow, allow) {
		t.Fatalf("session shows network %q allow %q", s.Network, s.Allow)
	}
	if got := e.net.mode(s.ID); got != netpolicy.ModeAllowlist {
		t.Fatalf("the host's network of the session has mode %q", got)
	}
	// Its sandbox (a pooled one) got its link.
	b := e.h.box(s.ID)
	if b == nil {
		t.Fatal("no sandbox")
	}
	_, linked, a := e.net.state(s.ID)
	if linked != b.netns {
		t.Fatalf("link in %q, sandbox %q", linked, b.netns)
	}
	// The DNS knows the sandbox by its address.
	if id, p, ok := e.net.lookup(a.Addr); !ok || id != s.ID || p.Mode != netpolicy.ModeAllowlist {
		t.Fatalf("lookup of %s: %q %v %v", a.Addr, id, p, ok)
	}

	// A stop removes its network from the host; a start gives the new
	// sandbox one again, in the same slot.
	if _, err := d.StopSession(root, s.ID); err != nil {
		t.Fatal(err)
	}
	if e.net.mode(s.ID) != "" {
		t.Fatal("a stopped session's network is left")
	}
	if _, err := d.StartSession(root, s.ID); err != nil {
		t.Fatal(err)
	}
	if n, linked, now := e.net.state(s.ID); n != 2 || linked != e.h.box(s.ID).netns || now.Slot != a.Slot {
		t.Fatalf("after stop and start: %d attaches, link in %q", n, linked)
	}

	// A restarted daemon keeps the running sandbox's link, and knows its
	// address again.
	d.Close(context.Background())
	d = e.start()
	if n, _, _ := e.net.state(s.ID); n != 2 || e.net.mode(s.ID) != netpolicy.ModeAllowlist {
		t.Fatalf("after a daemon restart: %d attaches, mode %q", n, e.net.mode(s.ID))
	}
	if id, _, ok := e.net.lookup(a.Addr); !ok || id != s.ID {
		t.Fatal("a restarted daemon's DNS does not know the sandbox")
	}

	if err := d.DeleteSession(root, s.ID); err != nil {
		t.Fatal(err)
	}
	if e.net.mode(s.ID) != "" {
		t.Fatal("a deleted session's network is left")
	}
	if id, _, ok := e.net.lookup(a.Addr); ok && id == s.ID {
		t.Fatal("the DNS still knows a deleted session's address")
	}
}

func TestNetworkRefused(t *testing.T) {
	e := newEnv(t, nil)
	d := e.start()
	for _, tc := range []struct {
		name    string
		network string
		allow   []string
		want    func(error) bool
	}{
		{"unknown mode", "internet", nil, errdefs.IsInvalidArgument},
		{"none with allow", "none", []string{"example.com"}, errdefs.IsInvalidArgument},
		{"metadata", "allowlist", []string{"169.254.169.254"}, errdefs.IsInvalidArgument},
		{"bad entry", "allowlist", []string{"exa mple.com"}, errdefs.IsInvalidArgument},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := d.CreateSession(root, &api.CreateSessionRequest{Network: tc.network, Allow: tc.allow})
			if !tc.want(err) {
				t.Fatalf("got %v", err)
			}
		})
	}
	if n := len(d.sessions.all()); n != 0 || len(e.net.attaches) != 0 {
		t.Fatalf("refused creates left %d sessions, %d networks", n, len(e.net.attaches))
	}

	// A daemon without networking says so.
	d2 := startNetless(t)
	if _, err := d2.CreateSession(root, &api.CreateSessionRequest{Network: api.NetworkOpen}); !errdefs.IsUnavailable(err) {
		t.Fatalf("networkless daemon: %v", err)
	}
	if _, err := d2.CreateSession(root, &api.CreateSessionRequest{Network: api.NetworkNone}); err != nil {
		t.Fatalf("networkless daemon, network none: %v", err)
	}
}

// startNetless starts a daemon of a new env that cannot give sandboxes a
// network (as on a host without nftables).
func startNetless(t *testing.T) *Daemon {
	t.Helper()
	off := newEnv(t, nil)
	st, err := openStore(off.cfg)
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	d, err := newDaemon(context.Background(), off.cfg, log, metrics.New(), deps{store: st, rt: fakeRuntime{off.h}, inst: instance{id: "off"}, probe: off.disk,
		net: netDeps{off: "no nftables here"}})
	if err != nil {
		st.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close(context.Background()) })
	return d
}

func TestSetNetwork(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	d := e.start()
	s, err := d.CreateSession(root, &api.CreateSessionRequest{Network: api.NetworkAllowlist, Allow: []string{"example.com"}})
	if err != nil {
		t.Fatal(err)
	}
	got, err := d.SetNetwork(root, s.ID, &api.NetworkRequest{Network: api.NetworkOpen})
	if err != nil {
		t.Fatal(err)
	}
	if got.Network != api.NetworkOpen || len(got.Allow) != 0 || e.net.mode(s.ID) != netpolicy.ModeOpen {
		t.Fatalf("after PATCH open: %q %q, host %q", got.Network, got.Allow, e.net.mode(s.ID))
	}
	if _, _, a := e.net.state(s.ID); a == nil {
		t.Fatal("no network")
	} else if _, p, _ := e.net.lookup(a.Addr); p.Mode != netpolicy.ModeOpen {
		t.Fatal("the DNS answers by the old policy")
	}
	// Bad input changes nothing.
	if _, err := d.SetNetwork(root, s.ID, &api.NetworkRequest{Network: "allowlist", Allow: []string{"fd00:ec2::254"}}); !errdefs.IsInvalidArgument(err) {
		t.Fatalf("metadata allowed: %v", err)
	}
	if _, err := d.SetNetwork(as(1000), s.ID, &api.NetworkRequest{Network: api.NetworkNone}); !errdefs.IsNotFound(err) {
		t.Fatalf("another uid changed the network: %v", err)
	}
	d.Close(context.Background())
	d = e.start()
	if got, _ := d.GetSession(root, s.ID); got.Network != api.NetworkOpen {
		t.Fatalf("the change was not kept: %q", got.Network)
	}

	// A running session without a network gets one at once.
	plain := mustCreate(t, d, root)
	if _, err := d.SetNetwork(root, plain.ID, &api.NetworkRequest{Network: api.NetworkOpen}); err != nil {
		t.Fatal(err)
	}
	if _, linked, _ := e.net.state(plain.ID); e.net.mode(plain.ID) != netpolicy.ModeOpen || linked != e.h.box(plain.ID).netns {
		t.Fatal("a running session given a network has none")
	}
	// A stopped one gets it at its start.
	other := mustCreate(t, d, root)
	if _, err := d.StopSession(root, other.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := d.SetNetwork(root, other.ID, &api.NetworkRequest{Network: api.NetworkOpen}); err != nil {
		t.Fatal(err)
	}
	if e.net.mode(other.ID) != "" {
		t.Fatal("a stopped session got a link")
	}
	if _, err := d.StartSession(root, other.ID); err != nil {
		t.Fatal(err)
	}
	if e.net.mode(other.ID) != netpolicy.ModeOpen {
		t.Fatal("a stopped session given a network started without it")
	}
}

func TestLeftoverNetworkRemoved(t *testing.T) {
	e := newEnv(t, nil)
	ns, err := os.Create(filepath.Join(t.TempDir(), "ns"))
	if err != nil {
		t.Fatal(err)
	}
	defer ns.Close()
	if _, err := e.net.Attach(context.Background(), "orphan", ns, &netpolicy.Policy{Mode: netpolicy.ModeOpen}); err != nil {
		t.Fatal(err)
	}
	e.start()
	if e.net.mode("orphan") != "" {
		t.Fatal("a network no session owns was left at start")
	}
}

func TestNetworkCaps(t *testing.T) {
	e := newEnv(t, func(c *config.Config) { c.Network.MaxConnections = 100 })
	d := e.start()
	plain := mustCreate(t, d, root)
	if plain.EgressKbps != 0 || plain.MaxConnections != 0 {
		t.Fatalf("a session without network shows caps %d %d", plain.EgressKbps, plain.MaxConnections)
	}
	kbps := 800
	s, err := d.CreateSession(root, &api.CreateSessionRequest{Network: api.NetworkOpen, EgressKbps: &kbps})
	if err != nil {
		t.Fatal(err)
	}
	if s.EgressKbps != 800 || s.MaxConnections != 100 {
		t.Fatalf("caps %d %d, want 800 and the default 100", s.EgressKbps, s.MaxConnections)
	}
	if p := e.net.policyOf(s.ID); p.EgressKbps != 800 || p.MaxConnections != 100 {
		t.Fatalf("the host's policy has caps %d %d", p.EgressKbps, p.MaxConnections)
	}
	five := 5
	got, err := d.SetNetwork(root, s.ID, &api.NetworkRequest{Network: api.NetworkOpen, MaxConnections: &five})
	if err != nil {
		t.Fatal(err)
	}
	if got.EgressKbps != 800 || got.MaxConnections != 5 || e.net.policyOf(s.ID).MaxConnections != 5 {
		t.Fatalf("after PATCH: %d %d", got.EgressKbps, got.MaxConnections)
	}
	neg := -1
	if _, err := d.SetNetwork(root, s.ID, &api.NetworkRequest{Network: api.NetworkOpen, EgressKbps: &neg}); !errdefs.IsInvalidArgument(err) {
		t.Fatalf("negative cap: %v", err)
	}
	// A session that had no network gets the defaults with one.
	got, err = d.SetNetwork(root, plain.ID, &api.NetworkRequest{Network: api.NetworkOpen})
	if err != nil || got.MaxConnections != 100 {
		t.Fatalf("none → open: %v, caps %d", err, got.MaxConnections)
	}
}

func TestInstallPackages(t *testing.T) {
	e := newEnv(t, func(c *config.Config) { c.Network.PackageIndexURL = "http://198.19.1.10:8080/simple" })
	d := e.start()
	s := mustCreate(t, d, root)
	for _, bad := range [][]string{nil, {"-r", "x"}, {"numpy; rm -rf /"}, {"numpy==1.0 pandas"}, {"git+https://x/y"}, {"a'b"}} {
		if _, err := d.InstallPackages(root, s.ID, &api.PackagesRequest{Packages: bad}, nil); !errdefs.IsInvalidArgument(err) {
			t.Errorf("packages %q: %v", bad, err)
		}
	}
	if _, err := d.InstallPackages(root, s.ID, &api.PackagesRequest{Packages: []string{"x"}, IndexURL: "ftp://mirror/simple"}, nil); !errdefs.IsInvalidArgument(err) {
		t.Errorf("ftp index: %v", err)
	}
	ex, err := d.InstallPackages(root, s.ID, &api.PackagesRequest{Packages: []string{"numpy==1.26.4", "rich[jupyter]>=13,<14"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := `PIP_BREAK_SYSTEM_PACKAGES=1 'exec' 'python3' '-m' 'pip' 'install' '--user' '--no-input' '--no-cache-dir' '--disable-pip-version-check' '--no-warn-script-location' '--progress-bar' 'off' '--index-url' 'http://198.19.1.10:8080/simple' '--trusted-host' '198.19.1.10' '--' 'numpy==1.26.4' 'rich[jupyter]>=13,<14'`
	if !strings.Contains(ex.Stdout, want) {
		t.Errorf("ran %q", ex.Stdout)
	}
	// A session without a network had the index (and PyPI's file host)
	// for the install, then nothing again.
	if got := e.net.historyOf(s.ID); !slices.Equal(got, []string{"allowlist 198.19.1.10:8080 files.pythonhosted.org", "none"}) {
		t.Errorf("policies in force: %q", got)
	}
	// One whose own policy reaches the index keeps it as it is.
	open, err := d.CreateSession(root, &api.CreateSessionRequest{Network: api.NetworkOpen})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.InstallPackages(root, open.ID, &api.PackagesRequest{Packages: []string{"x"}}, nil); err != nil {
		t.Fatal(err)
	}
	if got := e.net.historyOf(open.ID); !slices.Equal(got, []string{"open"}) {
		t.Errorf("an open session's policies: %q", got)
	}
}

// TestPooledSandboxNetworkAhead: a pool makes its sandboxes' links ahead
// once claims want a network, and then a claim with one keeps the link;
// one without loses it. A pool whose claims want none makes none.
func TestPooledSandboxNetworkAhead(t *testing.T) {
	e := newEnv(t, func(c *config.Config) { c.PoolSize = 1 })
	d := e.start()
	waitPool(t, d, 1)
	// No claim has wanted a network yet: the pooled sandbox has no link,
	// nor does a claim without a network get one.
	first := mustCreate(t, d, root)
	if attaches, _, _ := e.net.state(first.ID); attaches != 0 {
		t.Fatalf("a claim of network none from a pool that never saw a network: %d links", attaches)
	}
	// The first claim with a network has its link made at claim.
	waitPool(t, d, 1)
	s, err := d.CreateSession(root, &api.CreateSessionRequest{Network: api.NetworkOpen})
	if err != nil {
		t.Fatal(err)
	}
	if attaches, _, _ := e.net.state(s.ID); attaches != 1 || !slices.Equal(e.net.historyOf(s.ID), []string{"open"}) {
		t.Fatalf("the first claim with a network: %d links, policies %q", attaches, e.net.historyOf(s.ID))
	}
	// From then on the pool's refills have their link made ahead: a claim
	// with a network keeps it, no new one.
	waitPool(t, d, 1)
	s, err = d.CreateSession(root, &api.CreateSessionRequest{Network: api.NetworkOpen})
	if err != nil {
		t.Fatal(err)
	}
	attaches, _, _ := e.net.state(s.ID)
	history := e.net.historyOf(s.ID)
	if attaches != 1 || !slices.Equal(history, []string{"none", "open"}) {
		t.Fatalf("a claimed sandbox: %d links, policies %q", attaches, history)
	}
	// A claim without one loses the link (in the background) and its slot.
	waitPool(t, d, 1)
	plain := mustCreate(t, d, root)
	if h := e.net.historyOf(plain.ID); !slices.Equal(h, []string{"none"}) {
		t.Fatalf("the pooled sandbox a claim without a network took had policies %q, want its link made ahead", h)
	}
	testutil.WaitFor(t, 5*time.Second, func() bool { return e.net.mode(plain.ID) == "" },
		"a session of network none kept the link made ahead")
	if sess, _ := d.sessions.get(plain.ID); sess.Snapshot().NetSlot != 0 {
		t.Fatal("a session of network none kept a slot")
	}
}
