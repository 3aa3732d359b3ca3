package daemon

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/containerd/errdefs"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/daemon/config"
	"github.com/sandboxd/sandboxd/daemon/metrics"
	"github.com/sandboxd/sandboxd/isolation"
	"github.com/sandboxd/sandboxd/store"
)

// lastSpec is the spec of the fake host's last start.
func (h *fakeHost) lastSpec() isolation.Spec {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.specs[len(h.specs)-1]
}

// TestSessionRuntime: a session runs on the runtime it names, else its
// template's, else default_runtime; the Session and a restart say and
// keep it; what cannot be runs answers 400 with why.
func TestSessionRuntime(t *testing.T) {
	e := newEnv(t, nil)
	d := e.start()
	if _, err := d.Templates().AddTemplate(root, &api.Template{Name: "gv", Runtime: api.RuntimeRunsc}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ asked, template, want string }{
		{"", "", api.RuntimeRunc},
		{api.RuntimeRunsc, "", api.RuntimeRunsc},
		{"", "gv", api.RuntimeRunsc},
		{api.RuntimeRunc, "gv", api.RuntimeRunc},
	} {
		s, err := d.CreateSession(root, &api.CreateSessionRequest{Runtime: c.asked, Template: c.template})
		if err != nil {
			t.Fatalf("%+v: %v", c, err)
		}
		if s.Runtime != c.want || e.h.lastSpec().Runtime != c.want {
			t.Errorf("%+v: session says %q, sandbox ran on %q", c, s.Runtime, e.h.lastSpec().Runtime)
		}
		if _, err := d.RestartSession(root, s.ID); err != nil {
			t.Fatal(err)
		}
		if got := e.h.lastSpec().Runtime; got != c.want {
			t.Errorf("%+v: restarted on %q", c, got)
		}
	}
	info, err := d.Info(root)
	if err != nil {
		t.Fatal(err)
	}
	if info.Runtime != api.RuntimeRunc || len(info.Runtimes) != 2 || !info.Runtimes[1].Usable || info.Runtimes[1].Networks {
		t.Errorf("info: %q %+v", info.Runtime, info.Runtimes)
	}

	for _, c := range []struct {
		req  api.CreateSessionRequest
		want string
	}{
		{api.CreateSessionRequest{Runtime: "kata"}, `runtime "kata" is not known`},
		{api.CreateSessionRequest{Runtime: api.RuntimeRunsc, Network: api.NetworkOpen}, "runtime runsc cannot give sessions a network on this host"},
		{api.CreateSessionRequest{Template: "gv", Network: api.NetworkOpen}, "runtime runsc cannot give sessions a network"},
	} {
		_, err := d.CreateSession(root, &c.req)
		if !errdefs.IsInvalidArgument(err) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want 400 %q", c.req, err, c.want)
		}
	}
	if _, err := d.Templates().AddTemplate(root, &api.Template{Name: "bad", Runtime: "kata"}); !errdefs.IsInvalidArgument(err) {
		t.Errorf("a template of an unknown runtime: %v", err)
	}
}

// TestUnusableRuntime: a runtime the host lacks answers 400 with what to
// install, for sessions and templates alike.
func TestUnusableRuntime(t *testing.T) {
	e := newEnv(t, nil)
	e.h.runtimes[1] = isolation.RuntimeInfo{Name: api.RuntimeRunsc, Problem: "runsc is not installed: install the runsc package (gVisor)"}
	d := e.start()
	_, err := d.CreateSession(root, &api.CreateSessionRequest{Runtime: api.RuntimeRunsc})
	if !errdefs.IsInvalidArgument(err) || !strings.Contains(err.Error(), "install the runsc package") {
		t.Fatalf("create on a missing runtime: %v", err)
	}
	if _, err := d.Templates().AddTemplate(root, &api.Template{Name: "gv", Runtime: api.RuntimeRunsc}); !errdefs.IsInvalidArgument(err) {
		t.Fatalf("a template of a missing runtime: %v", err)
	}
	mustCreate(t, d, root) // runc goes on
}

// TestStrictRuntime: with strict_runtime the default runtime is the only
// one, and a daemon whose default is unusable does not start.
func TestStrictRuntime(t *testing.T) {
	e := newEnv(t, func(c *config.Config) { c.DefaultRuntime, c.StrictRuntime = api.RuntimeRunsc, true })
	d := e.start()
	s := mustCreate(t, d, root)
	if s.Runtime != api.RuntimeRunsc {
		t.Fatalf("strict runsc daemon made a %s session", s.Runtime)
	}
	if _, err := d.CreateSession(root, &api.CreateSessionRequest{Runtime: api.RuntimeRunc}); !errdefs.IsInvalidArgument(err) || !strings.Contains(err.Error(), "strict_runtime") {
		t.Fatalf("runc on a strict runsc daemon: %v", err)
	}
	if _, err := d.Templates().AddTemplate(root, &api.Template{Name: "r", Runtime: api.RuntimeRunc}); !errdefs.IsInvalidArgument(err) {
		t.Fatalf("a runc template on a strict runsc daemon: %v", err)
	}
	if err := d.Close(context.Background()); err != nil {
		t.Fatal(err)
	}

	e.h.runtimes[1] = isolation.RuntimeInfo{Name: api.RuntimeRunsc, Problem: "runsc is not installed"}
	st, err := openStore(e.cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	_, err = newDaemon(context.Background(), e.cfg, slog.New(slog.NewTextHandler(io.Discard, nil)), metrics.New(), deps{store: st, rt: fakeRuntime{e.h}, ids: e.ids, inst: instance{id: "test"}, probe: e.disk})
	if err == nil || !strings.Contains(err.Error(), "strict_runtime is set and the default runtime runsc is not usable: runsc is not installed") {
		t.Fatalf("a strict daemon without its runtime started: %v", err)
	}
}

// TestNetworkAtStart: a runtime that takes its network when its sandbox
// starts (runsc) gets a namespace with the link made and the policy in
// force before the start, for a session of network "none" too (its link
// passes nothing), so a PATCH and a restart work as under runc; a sandbox
// started without one (networks were off) cannot get one later.
func TestNetworkAtStart(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	e.h.runtimes[1].Networks, e.h.runtimes[1].NetworkAtStart = true, true
	d := e.start()
	for _, network := range []string{api.NetworkNone, api.NetworkOpen} {
		s, err := d.CreateSession(root, &api.CreateSessionRequest{Runtime: api.RuntimeRunsc, Network: network})
		if err != nil {
			t.Fatal(err)
		}
		spec := e.h.lastSpec()
		n, ns, _ := e.net.state(s.ID)
		if spec.NetNS == "" || n != 1 || ns != e.h.box(s.ID).netns {
			t.Fatalf("%s: started in %q; links %d, made in %q", network, spec.NetNS, n, ns)
		}
		if p := e.net.policyOf(s.ID); p == nil || p.Mode != network {
			t.Fatalf("%s: policy in force %+v", network, p)
		}
		if _, err := d.SetNetwork(root, s.ID, &api.NetworkRequest{Network: api.NetworkAllowlist, Allow: []string{"example.com"}}); err != nil {
			t.Fatal(err)
		}
		if n, _, _ := e.net.state(s.ID); n != 1 || e.net.policyOf(s.ID).Mode != api.NetworkAllowlist {
			t.Fatalf("%s: a PATCH made another link (%d) or left the policy %+v", network, n, e.net.policyOf(s.ID))
		}
		if _, err := d.RestartSession(root, s.ID); err != nil {
			t.Fatal(err)
		}
		if n, ns, _ := e.net.state(s.ID); n != 2 || ns != e.h.box(s.ID).netns || e.h.lastSpec().NetNS == "" {
			t.Fatalf("%s: restarted: links %d in %q", network, n, ns)
		}
	}
	// runc sandboxes get theirs once started, as before.
	s, err := d.CreateSession(root, &api.CreateSessionRequest{Network: api.NetworkOpen})
	if err != nil {
		t.Fatal(err)
	}
	if e.h.lastSpec().NetNS != "" || e.net.policyOf(s.ID) == nil {
		t.Fatalf("a runc session started in %q", e.h.lastSpec().NetNS)
	}

	// A runsc sandbox started without a link (no networks then) keeps
	// none: a PATCH to a network says what to do.
	off := newEnv(t, nil)
	off.h.runtimes[1].Networks, off.h.runtimes[1].NetworkAtStart = true, true
	d2 := off.start()
	s, err = d2.CreateSession(root, &api.CreateSessionRequest{Runtime: api.RuntimeRunsc})
	if err != nil {
		t.Fatal(err)
	}
	ss, _ := d2.sessions.get(s.ID)
	ss.Update(func(r *store.Record) { r.NetSlot = 0 })
	_, err = d2.SetNetwork(root, s.ID, &api.NetworkRequest{Network: api.NetworkOpen})
	if !errdefs.IsConflict(err) || !strings.Contains(err.Error(), "stop the session, change its network, and start it again") {
		t.Fatalf("PATCH of a runsc sandbox without a link: %v", err)
	}
	if got, _ := d2.GetSession(root, s.ID); got.Network != api.NetworkNone {
		t.Fatalf("the refused PATCH was kept: %s", got.Network)
	}
}
