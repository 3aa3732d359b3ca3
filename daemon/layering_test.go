package daemon

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestLayering keeps the core's imports running one way: server → daemon
// → Runtime/Sandbox → isolation. Isolation never imports the daemon nor
// serves HTTP; the daemon never reaches past the runtime interface into
// libcontainer or the agent's wire protocol.
func TestLayering(t *testing.T) {
	// An owner package (daemon/disk, daemon/node, …) may read the
	// configuration and a session's state, nothing else of the daemon's:
	// the exceptions to its rule below, by folder.
	ownerLeaves := []string{"github.com/sandboxd/sandboxd/daemon/config", "github.com/sandboxd/sandboxd/daemon/session"}
	allowed := map[string][]string{"disk": ownerLeaves, "node": ownerLeaves, "metrics": ownerLeaves, "process": {"github.com/sandboxd/sandboxd/daemon/sandboxfs"}}
	rules := []struct {
		dir       string
		recursive bool
		forbidden []string
		// outsideTests lets the package's external tests (package
		// x_test) import what it must not: they test it from outside.
		outsideTests bool
	}{
		// The runtime's contract has its own types: the daemon converts
		// them to the API's wire types (daemon/execution).
		{"../isolation", true, []string{"github.com/sandboxd/sandboxd/daemon", "net/http", "github.com/sandboxd/sandboxd/api"}, false},
		{"sandboxfs", true, []string{"net/http"}, false},
		// The router declares what it needs (server.Backend); it knows
		// nothing of the daemon's packages, as moby's routers.
		{"server", true, []string{"github.com/sandboxd/sandboxd/daemon"}, false},
		// The configuration is a leaf that the daemon, its owners and
		// cmd/sandboxd read: it takes nothing from them (as moby's
		// daemon/config).
		{"config", true, []string{"github.com/sandboxd/sandboxd/daemon"}, false},
		// The templates' owner declares what it needs of the daemon
		// (pool.Sandboxes, Host): it never imports it (the compiler
		// refuses that cycle), nor the router it serves by shape, nor
		// what the runtime hides.
		{"pool", true, []string{"github.com/sandboxd/sandboxd/daemon/server", "github.com/opencontainers/runc/libcontainer", "github.com/sandboxd/sandboxd/isolation/agent"}, false},
		// The owners hold their state behind narrow interfaces: they take
		// what they need from the daemon as arguments, never *Daemon, and
		// the router knows them only by the shape of its backends.
		{"disk", true, []string{"github.com/sandboxd/sandboxd/daemon"}, false},
		{"node", true, []string{"github.com/sandboxd/sandboxd/daemon"}, false},
		// The account of executions knows a session only through
		// execution.Session, and the store through execution.History: it
		// takes nothing under daemon/ (the router's rule above keeps
		// daemon/server from it).
		{"execution", true, []string{"github.com/sandboxd/sandboxd/daemon"}, false},
		// The metrics read the daemon through metrics.Source at scrape
		// time and are told the rest; the router takes only their
		// handler and registry, from cmd/sandboxd.
		{"metrics", true, []string{"github.com/sandboxd/sandboxd/daemon"}, false},
		// The processes' owner finds a session through process.Options
		// and reaches its files through sandboxfs alone.
		{"process", true, []string{"github.com/sandboxd/sandboxd/daemon"}, false},
		// The E2B gateway is a client of the daemon's socket, as
		// sandboxctl is: it reaches sandboxes only through the API.
		{"../e2b", true, []string{"github.com/sandboxd/sandboxd/daemon", "github.com/sandboxd/sandboxd/isolation", "github.com/sandboxd/sandboxd/store"}, false},
		// Host checks take probes from their caller: the runtime may
		// depend on them, never they on it.
		{"../internal/hostcheck", true, []string{"github.com/sandboxd/sandboxd/isolation"}, false},
		{".", false, []string{"github.com/opencontainers/runc/libcontainer", "github.com/sandboxd/sandboxd/isolation/agent"}, false},
		// The runtimes' engines implement isolation's seam
		// (isolation.Engine, isolation.Container) and are handed to it:
		// isolation imports neither, and neither the other.
		{"../isolation", false, []string{"github.com/sandboxd/sandboxd/isolation/runc", "github.com/sandboxd/sandboxd/isolation/runsc"}, true},
		{"../isolation/runc", true, []string{"github.com/sandboxd/sandboxd/isolation/runsc"}, false},
		{"../isolation/runsc", true, []string{"github.com/sandboxd/sandboxd/isolation/runc"}, false},
	}
	for _, r := range rules {
		err := filepath.WalkDir(r.dir, func(path string, e fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if e.IsDir() {
				if path != r.dir && (!r.recursive || e.Name() == "testdata") {
					return filepath.SkipDir
				}
				return nil
			}
			if !strings.HasSuffix(path, ".go") {
				return nil
			}
			f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
			if err != nil {
				return err
			}
			if r.outsideTests && strings.HasSuffix(f.Name.Name, "_test") {
				return nil
			}
			for _, imp := range f.Imports {
				p, _ := strconv.Unquote(imp.Path.Value)
				if slices.Contains(allowed[r.dir], p) {
					continue
				}
				for _, bad := range r.forbidden {
					if p == bad || strings.HasPrefix(p, bad+"/") {
						t.Errorf("%s imports %s: the layers run server → daemon → Runtime/Sandbox → isolation (docs/core.md)", path, p)
					}
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}
