package daemon

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/containerd/errdefs"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/daemon/config"
)

// TestTemplatePackages: a template's packages are installed in a build
// sandbox without the preload code, whose network reaches the index for
// the install alone; its sessions (and its trial) start with the
// packages folder and the preload; the folder lives as long as the
// template, across a restart.
func TestTemplatePackages(t *testing.T) {
	e := newEnv(t, func(c *config.Config) { c.Network.PackageIndexURL = "http://198.19.1.10:8080/simple" })
	d := e.start()
	for _, tc := range []struct {
		name string
		tmpl api.Template
	}{
		{"an option", api.Template{Name: "a", Packages: []string{"--index-url=http://evil/simple"}}},
		{"two in one", api.Template{Name: "b", Packages: []string{"numpy pandas"}}},
		{"an ftp index", api.Template{Name: "c", Packages: []string{"numpy"}, IndexURL: "ftp://mirror/simple"}},
		{"an index alone", api.Template{Name: "d", IndexURL: "http://198.19.1.10/simple"}},
	} {
		if _, err := d.Templates().AddTemplate(root, &tc.tmpl); !errdefs.IsInvalidArgument(err) {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
	if n := len(e.h.startSpecs()); n != 0 {
		t.Fatalf("refused templates started %d sandboxes", n)
	}

	tmpl, err := d.Templates().AddTemplate(root, &api.Template{Name: "sci", Packages: []string{"sbxdemo==1.0"}, Preload: "import sbxdemo"})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(tmpl.Packages, []string{"sbxdemo==1.0"}) {
		t.Errorf("template packages: %q", tmpl.Packages)
	}
	folder := d.paths.templatePackages("sci")
	if _, err := os.Stat(filepath.Join(folder, "site", "sbxdemo", "__init__.py")); err != nil {
		t.Fatalf("the packages folder: %v", err)
	}
	specs := e.h.startSpecs()
	if len(specs) != 2 {
		t.Fatalf("%d starts, want the build and the trial", len(specs))
	}
	if build := specs[0]; build.Preload != "" || build.Packages != "" {
		t.Errorf("the build sandbox had preload %q, packages %q", build.Preload, build.Packages)
	}
	if got := e.net.historyOf(specs[0].ID); !slices.Equal(got, []string{"allowlist 198.19.1.10:8080 files.pythonhosted.org", "none"}) {
		t.Errorf("the build's policies: %q", got)
	}
	if trial := specs[1]; trial.Preload != "import sbxdemo" || trial.Packages != folder {
		t.Errorf("the trial had preload %q, packages %q", trial.Preload, trial.Packages)
	}
	for _, s := range specs {
		if e.h.box(s.ID) != nil {
			t.Errorf("sandbox %s of the add still runs", s.ID)
		}
	}
	s, err := d.CreateSession(root, &api.CreateSessionRequest{Template: "sci"})
	if err != nil {
		t.Fatal(err)
	}
	if last := e.h.startSpecs()[2]; last.ID != s.ID || last.Packages != folder {
		t.Errorf("the session's start: %+v", last)
	}
	if err := d.Templates().DeleteTemplate(root, "sci"); !errdefs.IsConflict(err) {
		t.Fatalf("delete of a template in use: %v", err)
	}
	if err := d.DeleteSession(root, s.ID); err != nil {
		t.Fatal(err)
	}

	// A restarted daemon has the template; one whose folder is gone says
	// so when it is used.
	if err := d.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	d = e.start()
	if _, err := d.CreateSession(root, &api.CreateSessionRequest{Template: "sci"}); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(folder); err != nil {
		t.Fatal(err)
	}
	d = e.start()
	if _, err := d.CreateSession(root, &api.CreateSessionRequest{Template: "sci"}); !errdefs.IsConflict(err) {
		t.Fatalf("a template whose packages are gone: %v", err)
	}
	for _, s := range d.sessions.all() {
		if err := d.DeleteSession(root, s.ID()); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.Templates().DeleteTemplate(root, "sci"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(folder); !os.IsNotExist(err) {
		t.Errorf("the template's packages are left: %v", err)
	}
}

// TestTemplatePackagesFailed: a failed install refuses the template and
// leaves nothing; a daemon without a network refuses packages at once;
// a packages folder no template owns goes at start.
func TestTemplatePackagesFailed(t *testing.T) {
	e := newEnv(t, nil)
	d := e.start()
	e.h.mu.Lock()
	e.h.failStart = errdefs.ErrUnavailable.WithMessage("no sandbox today")
	e.h.mu.Unlock()
	if _, err := d.Templates().AddTemplate(root, &api.Template{Name: "sci", Packages: []string{"x"}}); err == nil {
		t.Fatal("added")
	}
	e.h.mu.Lock()
	e.h.failStart = nil
	e.h.mu.Unlock()
	if _, err := os.Stat(d.paths.templatePackages("sci")); !os.IsNotExist(err) {
		t.Errorf("a refused template left its packages: %v", err)
	}
	if len(d.sessions.all()) != 0 || len(e.net.attaches) != 0 {
		t.Error("a refused template left a session or network")
	}
	if err := d.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	stray := filepath.Join(d.paths.templatePackages("stray"), "site")
	if err := os.MkdirAll(stray, 0o755); err != nil {
		t.Fatal(err)
	}
	d = e.start()
	if _, err := os.Stat(d.paths.templatePackages("stray")); !os.IsNotExist(err) {
		t.Errorf("stray packages left: %v", err)
	}

	d2 := startNetless(t)
	if _, err := d2.Templates().AddTemplate(root, &api.Template{Name: "sci", Packages: []string{"x"}}); !errdefs.IsUnavailable(err) {
		t.Fatalf("networkless daemon: %v", err)
	}
}
