package e2b

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/containerd/errdefs"

	"github.com/sandboxd/sandboxd/api"
)

// fakeTemplates are a daemon's templates, as EnsureTemplate sees them:
// python (a pool of poolSize) and what was added; adds past room fail
// as a daemon's do when its pools are full.
type fakeTemplates struct {
	mu       sync.Mutex
	byName   map[string]*api.Template
	added    []api.Template
	poolRoom int
}

func newFakeTemplates(poolSize, room int) *fakeTemplates {
	return &fakeTemplates{poolRoom: room, byName: map[string]*api.Template{
		"python": {Name: "python", Ref: "python", Rootfs: api.RootfsHost, Builtin: true, PoolSize: &poolSize},
	}}
}

func (f *fakeTemplates) Template(_ context.Context, name string) (*api.Template, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	t, ok := f.byName[name]
	if !ok {
		return nil, errdefs.ErrNotFound.WithMessage("no such template: " + name)
	}
	out := *t
	return &out, nil
}

func (f *fakeTemplates) AddTemplate(_ context.Context, t *api.Template) (*api.Template, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.added = append(f.added, *t)
	if t.PoolSize != nil && *t.PoolSize > f.poolRoom {
		return nil, api.Errorf(errdefs.ErrResourceExhausted, "pool_max_total")
	}
	out := *t
	out.Ref = "1000/" + t.Name
	f.byName[t.Name] = &out
	return &out, nil
}

// TestEnsureTemplate: the gateway makes its template from the daemon's
// default, with E2B's user at /home/user and the default's pool (none
// when the pools have no room), and takes one of E2B's user already
// there; one of another user it refuses.
func TestEnsureTemplate(t *testing.T) {
	ctx := context.Background()
	log := slog.New(slog.DiscardHandler)
	f := newFakeTemplates(2, 4)
	ref, err := EnsureTemplate(ctx, f, BaseTemplate, log)
	if err != nil || ref != "1000/"+BaseTemplate {
		t.Fatalf("made %q %v", ref, err)
	}
	got := f.added[0]
	if got.User == nil || *got.User != (api.TemplateUser{Name: "user", Home: "/home/user"}) || got.Rootfs != api.RootfsHost || got.PoolSize == nil || *got.PoolSize != 2 {
		t.Fatalf("the template made: %+v", got)
	}
	if ref, err := EnsureTemplate(ctx, f, BaseTemplate, log); err != nil || ref != "1000/"+BaseTemplate || len(f.added) != 1 {
		t.Fatalf("again: %q %v, %d adds", ref, err, len(f.added))
	}

	f = newFakeTemplates(8, 4)
	if _, err := EnsureTemplate(ctx, f, BaseTemplate, log); err != nil || len(f.added) != 2 || f.added[1].PoolSize != nil {
		t.Fatalf("with no room for a pool: %v %+v", err, f.added)
	}

	f.byName["mine"] = &api.Template{Name: "mine", Ref: "mine"}
	if _, err := EnsureTemplate(ctx, f, "mine", log); err == nil || !strings.Contains(err.Error(), `need user "user"`) {
		t.Fatalf("a template of the default user: %v", err)
	}
}

// TestBaseTemplateMapped: E2B's base and code-interpreter-v1 create
// sessions of the template the gateway is given for them.
func TestBaseTemplateMapped(t *testing.T) {
	tg := newTestGateway(t)
	tg.g.o.Templates = map[string]string{"base": "1000/" + BaseTemplate, "code-interpreter-v1": "1000/" + BaseTemplate}
	for _, id := range []string{"base", "code-interpreter-v1", "other"} {
		tg.create(tg.key, `{"templateID":"`+id+`"}`)
	}
	want := []string{"1000/" + BaseTemplate, "1000/" + BaseTemplate, "other"}
	for i, c := range tg.d.created {
		if c.Template != want[i] {
			t.Errorf("create %d: template %q, want %q", i, c.Template, want[i])
		}
	}
}

// TestHomeTemplateCwd: a command of a sandbox of E2B's user starts in
// /home/user's folder itself; of another template, in the /workspace
// folder E2B's path names.
func TestHomeTemplateCwd(t *testing.T) {
	tg := newTestGateway(t)
	tg.g.o.Templates = map[string]string{"base": "1000/" + BaseTemplate}
	tg.g.o.HomeTemplates = []string{"1000/" + BaseTemplate}
	home := tg.create(tg.key, `{"templateID":"base"}`)
	other := tg.create(tg.key, `{"templateID":"other"}`)
	srv := gatewayServer(t, tg)
	for _, c := range []struct {
		s         sandbox
		cwd, want string
	}{
		{home, "/home/user/proj", "/home/user/proj"},
		{home, "proj", "/home/user/proj"},
		{home, "/tmp", "/tmp"},
		{other, "/home/user/proj", "/workspace/proj"},
	} {
		next := streamCall(t, srv, c.s, "process.Process/Start", `{"process":{"cmd":"true","cwd":"`+c.cwd+`"}}`)
		next()
		tg.d.mu.Lock()
		got := tg.d.started[len(tg.d.started)-1].Cwd
		tg.d.mu.Unlock()
		if got != c.want {
			t.Errorf("cwd %s of a %s sandbox: %q, want %q", c.cwd, c.s.TemplateID, got, c.want)
		}
	}
}
