package daemon

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/containerd/errdefs"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/isolation"
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
	if _, err := d.AddTemplate(root, &api.Template{Name: "gv", Runtime: api.RuntimeRunsc}); err != nil {
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
	if _, err := d.AddTemplate(root, &api.Template{Name: "bad", Runtime: "kata"}); !errdefs.IsInvalidArgument(err) {
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
	if _, err := d.AddTemplate(root, &api.Template{Name: "gv", Runtime: api.RuntimeRunsc}); !errdefs.IsInvalidArgument(err) {
		t.Fatalf("a template of a missing runtime: %v", err)
	}
	mustCreate(t, d, root) // runc goes on
}

// TestStrictRuntime: with strict_runtime the default runtime is the only
// one, and a daemon whose default is unusable does not start.
func TestStrictRuntime(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.DefaultRuntime, c.StrictRuntime = api.RuntimeRunsc, true })
	d := e.start()
	s := mustCreate(t, d, root)
	if s.Runtime != api.RuntimeRunsc {
		t.Fatalf("strict runsc daemon made a %s session", s.Runtime)
	}
	if _, err := d.CreateSession(root, &api.CreateSessionRequest{Runtime: api.RuntimeRunc}); !errdefs.IsInvalidArgument(err) || !strings.Contains(err.Error(), "strict_runtime") {
		t.Fatalf("runc on a strict runsc daemon: %v", err)
	}
	if _, err := d.AddTemplate(root, &api.Template{Name: "r", Runtime: api.RuntimeRunc}); !errdefs.IsInvalidArgument(err) {
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
	_, err = newDaemon(context.Background(), e.cfg, slog.New(slog.NewTextHandler(io.Discard, nil)), newMetrics(), deps{store: st, rt: fakeRuntime{e.h}, ids: e.ids, inst: instance{id: "test"}, probe: e.disk})
	if err == nil || !strings.Contains(err.Error(), "strict_runtime is set and the default runtime runsc is not usable: runsc is not installed") {
		t.Fatalf("a strict daemon without its runtime started: %v", err)
	}
}
