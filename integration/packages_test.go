package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sandboxd/sandboxd/api"
)

// packageIndex is a host-only test's fake internet serving sbxdemo 1.0
// (its module's code given) at index, and a daemon whose sandboxes use it.
func packageIndex(t *testing.T, code, cfg string) (f *fakeNet, index string, d *daemon) {
	t.Helper()
	hostOnly(t)
	f = newFakeNet(t)
	f.AddPackage(t, "sbxdemo", "1.0", code)
	return f, fmt.Sprintf("http://%s/simple", f.Web), netDaemon(t, f, cfg)
}

// TestPackages installs a package from an index in the fake internet into
// a session without a network: the index is open to it for the install
// only, the interpreter imports the package at once, and a restart keeps
// it (it lives in /workspace).
func TestPackages(t *testing.T) {
	t.Parallel()
	hostOnly(t)
	netRuntimes(t, func(t *testing.T, rt, cfg string) { testPackages(t, cfg) })
}

func testPackages(t *testing.T, cfg string) {
	f, index, d := packageIndex(t, "VALUE = 'installed from the fake index'\n", cfg)
	id := d.netSession(t, api.NetworkNone)
	out, errOut, code := d.ctl(t, "", "pip", id, "--index-url", index, "sbxdemo==1.0")
	if code != 0 || !strings.Contains(out, "Successfully installed sbxdemo-1.0") {
		t.Fatalf("sandboxctl pip: exit %d\n%s\n%s", code, out, errOut)
	}
	if got := strings.TrimSpace(d.py(t, id, "import sbxdemo\nprint(sbxdemo.VALUE)").Stdout); got != "installed from the fake index" {
		t.Fatalf("import after install: %q", got)
	}
	// The index is closed again.
	expectProbe(t, d, id, f.Web.String(), "blocked")
	if _, err := d.c.RestartSession(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(d.py(t, id, "import sbxdemo\nprint(sbxdemo.VALUE)").Stdout); got != "installed from the fake index" {
		t.Fatalf("import after restart: %q", got)
	}
	// A package the index does not have fails as pip fails.
	e, err := d.c.InstallPackages(context.Background(), id, &api.PackagesRequest{Packages: []string{"nosuchpkg"}, IndexURL: index}, nil)
	if err != nil || e.Status == api.StatusOK || e.ExitCode == 0 {
		t.Fatalf("a missing package: %v %+v", err, e)
	}
	// Bad input is refused before the sandbox.
	if _, err := d.c.InstallPackages(context.Background(), id, &api.PackagesRequest{Packages: []string{"--index-url=http://evil/simple"}}, nil); err == nil {
		t.Fatal("an option passed as a package")
	}
}

// TestTemplatePackages adds a template with a package from an index in the
// fake internet: its sessions, pooled or not, with no network, import it
// from the read-only /packages (its preload code too), from Python and
// from the shell; a session's own install of another version wins; the
// template keeps its packages across a daemon restart, and its removal
// takes them.
func TestTemplatePackages(t *testing.T) {
	t.Parallel()
	f, index, d := packageIndex(t, "VALUE = 'from the template'\n", "")
	ctx := context.Background()
	out, errOut, code := d.ctl(t, "", "template", "add", "sci", "-p", "sbxdemo==1.0", "--index-url", index,
		"--preload", "import sbxdemo", "--pool-size", "1", "--json")
	if code != 0 {
		t.Fatalf("template add: exit %d\n%s\n%s", code, out, errOut)
	}
	var tmpl api.Template
	if err := json.Unmarshal([]byte(out), &tmpl); err != nil || !slices.Equal(tmpl.Packages, []string{"sbxdemo==1.0"}) || tmpl.IndexURL != index {
		t.Fatalf("template add answered %v %s", err, out)
	}
	folder := filepath.Join(d.dataDir, "packages", "sci")
	check := func(id string) {
		t.Helper()
		e := d.py(t, id, "print(sbxdemo.VALUE, sbxdemo.__file__)")
		if got := strings.TrimSpace(e.Stdout); got != "from the template /packages/site/sbxdemo/__init__.py" {
			t.Errorf("session %s: preloaded module: %q %+v", id, got, e.Error)
		}
		if got := strings.TrimSpace(d.sh(t, id, "python3 -c 'import sbxdemo; print(sbxdemo.VALUE)'").Stdout); got != "from the template" {
			t.Errorf("session %s: python3 from the shell: %q", id, got)
		}
		if e := d.sh(t, id, "touch /packages/site/x"); e.ExitCode == 0 {
			t.Errorf("session %s: /packages is writable", id)
		}
		if got := d.sh(t, id, "cat /proc/self/mountinfo").Stdout; strings.Contains(got, d.dataDir) || !strings.Contains(got, " /packages ") {
			t.Errorf("session %s: mount table:\n%s", id, got)
		}
	}
	waitFor(t, func() bool {
		tm, err := d.c.Template(ctx, "sci")
		return err == nil && tm.PoolIdle == 1
	})
	pooled := d.session(t, &api.CreateSessionRequest{Template: "sci"})
	cold := d.session(t, &api.CreateSessionRequest{Template: "sci"})
	check(pooled)
	check(cold)

	// A session's own install of another version comes first.
	f.AddPackage(t, "sbxdemo", "2.0", "VALUE = 'from the session'\n")
	if out, errOut, code := d.ctl(t, "", "pip", cold, "--index-url", index, "sbxdemo==2.0"); code != 0 {
		t.Fatalf("sandboxctl pip: exit %d\n%s\n%s", code, out, errOut)
	}
	if got := strings.TrimSpace(d.sh(t, cold, "python3 -c 'import sbxdemo; print(sbxdemo.VALUE)'").Stdout); got != "from the session" {
		t.Errorf("after the session's install: %q", got)
	}

	d.terminate()
	d.launch()
	check(pooled)
	for _, id := range []string{pooled, cold} {
		if err := d.c.DeleteSession(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	if _, errOut, code := d.ctl(t, "", "template", "rm", "sci"); code != 0 {
		t.Fatalf("template rm: %s", errOut)
	}
	if _, err := os.Stat(folder); !os.IsNotExist(err) {
		t.Errorf("the packages folder is left: %v", err)
	}

	// An install that fails refuses the template, with pip's words.
	_, errOut, code = d.ctl(t, "", "template", "add", "bad", "-p", "nosuchpkg", "--index-url", index)
	if code == 0 || !strings.Contains(errOut, "nosuchpkg") {
		t.Errorf("a template with a missing package: exit %d, %s", code, errOut)
	}
	if _, err := d.c.Template(ctx, "bad"); err == nil {
		t.Error("the refused template exists")
	}
}
