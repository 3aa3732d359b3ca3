package daemon

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/containerd/errdefs"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/daemon/config"
	"github.com/sandboxd/sandboxd/daemon/pool"
)

// lastPreload is the preload code of the fake host's latest sandbox start.
func lastPreload(t *testing.T, e *testEnv) string {
	t.Helper()
	specs := e.h.startSpecs()
	if len(specs) == 0 {
		t.Fatal("no sandbox started")
	}
	return specs[len(specs)-1].Preload
}

// TestTemplateNamesPerOwner: a template is its owner's. A member's
// template never answers for root's bare name (the confused deputy of
// issue 30: root's create --template data-science ran a member's
// preload), two owners may each have one of a name, 409 says only that
// the caller's own is in the way, and another user's template is named
// only as uid/name, by root or by its owner.
func TestTemplateNamesPerOwner(t *testing.T) {
	e := newEnv(t, nil)
	d := e.start()
	alice, bob := as(1000), as(2000)

	mine, err := d.Templates().AddTemplate(alice, &api.Template{Name: "data-science", Preload: "ALICE"})
	if err != nil {
		t.Fatal(err)
	}
	if mine.Ref != "1000/data-science" || mine.OwnerUID != 1000 {
		t.Fatalf("alice's template: ref %q, owner %d", mine.Ref, mine.OwnerUID)
	}

	// Root's bare name is root's own template: there is none.
	if _, err := d.CreateSession(root, &api.CreateSessionRequest{Template: "data-science"}); !errdefs.IsNotFound(err) {
		t.Fatalf("root creates from alice's template by its bare name: %v, want not found", err)
	}
	if _, err := d.Templates().Template(root, "data-science"); !errdefs.IsNotFound(err) {
		t.Fatalf("root shows alice's template by its bare name: %v", err)
	}
	if err := d.Templates().DeleteTemplate(root, "data-science"); !errdefs.IsNotFound(err) {
		t.Fatalf("root removes alice's template by its bare name: %v", err)
	}

	// Root may add its own of the name: no 409 for alice's. So may bob.
	if _, err := d.Templates().AddTemplate(root, &api.Template{Name: "data-science", Preload: "ROOT"}); err != nil {
		t.Fatalf("root adds data-science beside alice's: %v", err)
	}
	if _, err := d.Templates().AddTemplate(bob, &api.Template{Name: "data-science", Preload: "BOB"}); err != nil {
		t.Fatalf("bob adds data-science beside alice's and root's: %v", err)
	}
	// 409 within one owner only.
	if _, err := d.Templates().AddTemplate(alice, &api.Template{Name: "data-science"}); !errdefs.IsConflict(err) {
		t.Fatalf("alice adds her data-science again: %v, want a conflict", err)
	}
	if _, err := d.Templates().AddTemplate(as(3000), &api.Template{Name: pool.DefaultTemplate}); !errdefs.IsConflict(err) {
		t.Fatalf("a member names a template after the built-in one: %v, want a conflict", err)
	}

	// Each caller's bare name: its own, else root's.
	for _, tc := range []struct {
		who           string
		ctx           context.Context
		name, preload string
		ref           string
	}{
		{"root", root, "data-science", "ROOT", "data-science"},
		{"alice", alice, "data-science", "ALICE", "1000/data-science"},
		{"bob", bob, "data-science", "BOB", "2000/data-science"},
		{"carol, who has none", as(3000), "data-science", "ROOT", "data-science"},
		{"root by uid/name", root, "1000/data-science", "ALICE", "1000/data-science"},
		{"alice by her own uid/name", alice, "1000/data-science", "ALICE", "1000/data-science"},
		{"bob by root's 0/name", bob, "0/data-science", "ROOT", "data-science"},
	} {
		s, err := d.CreateSession(tc.ctx, &api.CreateSessionRequest{Template: tc.name})
		if err != nil {
			t.Fatalf("%s creates --template %s: %v", tc.who, tc.name, err)
		}
		if got := lastPreload(t, e); got != tc.preload || s.Template != tc.ref {
			t.Errorf("%s creates --template %s: preload %q, template %q; want %q, %q", tc.who, tc.name, got, s.Template, tc.preload, tc.ref)
		}
		if got, err := d.Templates().Template(tc.ctx, tc.name); err != nil || got.Ref != tc.ref {
			t.Errorf("%s shows %s: %+v, %v; want %s", tc.who, tc.name, got, err, tc.ref)
		}
		if err := d.DeleteSession(tc.ctx, s.ID); err != nil {
			t.Fatal(err)
		}
	}

	// A member never reaches another member's template, nor knows it is
	// there: not found, as a missing one.
	for _, name := range []string{"1000/data-science", "1000/nope", "01000/data-science", "x/data-science", "1000/../data-science"} {
		if _, err := d.CreateSession(bob, &api.CreateSessionRequest{Template: name}); !errdefs.IsNotFound(err) {
			t.Errorf("bob creates from %s: %v, want not found", name, err)
		}
		if _, err := d.Templates().Template(bob, name); !errdefs.IsNotFound(err) {
			t.Errorf("bob shows %s: %v, want not found", name, err)
		}
		if err := d.Templates().DeleteTemplate(bob, name); !errdefs.IsNotFound(err) {
			t.Errorf("bob removes %s: %v, want not found", name, err)
		}
	}

	// Listing: every one with its owner, each caller those it may use.
	refs := func(ctx context.Context) map[string]uint32 {
		list, err := d.Templates().Templates(ctx)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]uint32{}
		for _, tm := range list {
			out[tm.Ref] = tm.OwnerUID
		}
		return out
	}
	if got := refs(root); len(got) != 4 || got["1000/data-science"] != 1000 || got["2000/data-science"] != 2000 {
		t.Errorf("root lists %v", got)
	}
	if got := refs(bob); len(got) != 3 || got["2000/data-science"] != 2000 {
		t.Errorf("bob lists %v", got)
	}
	if _, ok := refs(bob)["1000/data-science"]; ok {
		t.Error("bob lists alice's template")
	}

	// Removing: root's bare name removes root's, alice's stays hers.
	if err := d.Templates().DeleteTemplate(root, "data-science"); err != nil {
		t.Fatal(err)
	}
	if got, err := d.Templates().Template(alice, "data-science"); err != nil || got.Ref != "1000/data-science" {
		t.Fatalf("alice's template after root removed its own: %+v, %v", got, err)
	}
	if _, err := d.CreateSession(as(3000), &api.CreateSessionRequest{Template: "data-science"}); !errdefs.IsNotFound(err) {
		t.Fatalf("carol, root's gone: %v, want not found", err)
	}
	// A session keeps its template by reference: alice's in use is not
	// removed, bob's of the same name is.
	s, err := d.CreateSession(alice, &api.CreateSessionRequest{Template: "data-science"})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Templates().DeleteTemplate(root, "1000/data-science"); !errdefs.IsConflict(err) {
		t.Fatalf("root removes alice's template in use: %v, want a conflict", err)
	}
	if err := d.Templates().DeleteTemplate(bob, "data-science"); err != nil {
		t.Fatalf("bob removes his own while alice's is in use: %v", err)
	}

	// A restart finds every template under its owner, and the session's.
	if err := d.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	d = e.start()
	if got := refs(root); len(got) != 2 || got["1000/data-science"] != 1000 {
		t.Fatalf("after a restart root lists %v", got)
	}
	if _, err := d.RestartSession(alice, s.ID); err != nil {
		t.Fatalf("restart alice's session: %v", err)
	}
	if got := lastPreload(t, e); got != "ALICE" {
		t.Fatalf("alice's session restarted with preload %q", got)
	}
}

// TestTemplatePackagesPerOwner: two owners' templates of one name keep
// their packages in folders of their own; a daemon's packages folder of a
// user's template under its bare name (global names) is taken over.
func TestTemplatePackagesPerOwner(t *testing.T) {
	e := newEnv(t, func(c *config.Config) { c.Network.PackageIndexURL = "http://198.19.1.10:8080/simple" })
	d := e.start()
	alice := as(1000)
	for _, ctx := range []context.Context{root, alice} {
		if _, err := d.Templates().AddTemplate(ctx, &api.Template{Name: "sci", Packages: []string{"sbxdemo==1.0"}}); err != nil {
			t.Fatal(err)
		}
	}
	rootsDir, alicesDir := d.paths.templatePackages("sci"), d.paths.templatePackages("1000@sci")
	for _, dir := range []string{rootsDir, alicesDir} {
		if _, err := os.Stat(filepath.Join(dir, "site", "sbxdemo", "__init__.py")); err != nil {
			t.Fatalf("packages folder: %v", err)
		}
	}
	// Removing root's leaves alice's.
	if err := d.Templates().DeleteTemplate(root, "sci"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(alicesDir); err != nil {
		t.Fatalf("alice's packages went with root's template: %v", err)
	}
	// As an older daemon kept it: under its bare name.
	if err := d.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(alicesDir, rootsDir); err != nil {
		t.Fatal(err)
	}
	d = e.start()
	got, err := d.Templates().Template(alice, "sci")
	if err != nil || got.Error != "" {
		t.Fatalf("alice's template after the restart: %+v, %v", got, err)
	}
	if _, err := os.Stat(alicesDir); err != nil {
		t.Fatalf("alice's packages were not moved to her folder: %v", err)
	}
	if _, err := d.CreateSession(alice, &api.CreateSessionRequest{Template: "sci"}); err != nil {
		t.Fatal(err)
	}
	if specs := e.h.startSpecs(); specs[len(specs)-1].Packages != alicesDir {
		t.Fatalf("alice's session has packages %q, want %q", specs[len(specs)-1].Packages, alicesDir)
	}
}
