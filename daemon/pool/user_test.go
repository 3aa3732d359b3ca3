package pool

import (
	"testing"

	"github.com/containerd/errdefs"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/isolation"
)

// TestTemplateUser: a template's user is checked when it is added, kept
// (the default as none), and is what its sessions' sandboxes are told.
func TestTemplateUser(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t, nil)
	for _, u := range []api.TemplateUser{
		{Name: "root", Home: "/home/root"},
		{Name: "nobody"},
		{Name: "User"},
		{Name: "1user"},
		{Name: ""},
		{Name: "a:b"},
		{Name: "user", Home: "/root"},
		{Name: "user", Home: "/home"},
		{Name: "user", Home: "/home/"},
		{Name: "user", Home: "/home/a/b"},
		{Name: "user", Home: "/home/../etc"},
		{Name: "user", Home: "home/user"},
		{Name: "user", Home: "/workspace/x"},
	} {
		if _, err := e.ts.AddTemplate(as(1000), &api.Template{Name: "bad", User: &u}); !errdefs.IsInvalidArgument(err) {
			t.Errorf("user %+v: %v, want an invalid argument", u, err)
		}
	}
	out, err := e.ts.AddTemplate(as(1000), &api.Template{Name: "e2b", User: &api.TemplateUser{Name: "user", Home: "/home/user"}})
	if err != nil {
		t.Fatal(err)
	}
	if out.User == nil || *out.User != (api.TemplateUser{Name: "user", Home: "/home/user"}) {
		t.Fatalf("added: %+v", out.User)
	}
	if u := e.ts.UserOf("1000/e2b"); u != (isolation.User{Name: "user", Home: "/home/user"}) || u.HomeDir() != "/home/user" {
		t.Fatalf("sessions' user: %+v", u)
	}
	if def := templateDef(templateRecord(out)); def.User == nil || *def.User != *out.User {
		t.Fatalf("stored and read back: %+v", def.User)
	}
	// A name alone is at home in /workspace; the default asked is none.
	out, err = e.ts.AddTemplate(as(1000), &api.Template{Name: "named", User: &api.TemplateUser{Name: "alice"}})
	if err != nil || out.User == nil || out.User.Home != "/workspace" {
		t.Fatalf("named: %+v, %v", out, err)
	}
	out, err = e.ts.AddTemplate(as(1000), &api.Template{Name: "plain", User: &api.TemplateUser{Name: "sandbox", Home: "/workspace"}})
	if err != nil || out.User != nil {
		t.Fatalf("the default user: %+v, %v", out, err)
	}
	if u := e.ts.UserOf(DefaultTemplate); u.UserName() != "sandbox" || u.HomeDir() != "/workspace" {
		t.Fatalf("the built-in template's user: %+v", u)
	}
}
