package daemon

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestLayering keeps the core's imports running one way: server → daemon
// → Runtime/Sandbox → isolation. Isolation never imports the daemon nor
// serves HTTP; the daemon never reaches past the runtime interface into
// libcontainer or the agent's wire protocol.
func TestLayering(t *testing.T) {
	rules := []struct {
		dir       string
		recursive bool
		forbidden []string
	}{
		// The runtime's contract has its own types: the daemon converts
		// them to the API's wire types (runtimetypes.go).
		{"../isolation", true, []string{"github.com/sandboxd/sandboxd/daemon", "net/http", "github.com/sandboxd/sandboxd/api"}},
		{"sandboxfs", true, []string{"net/http"}},
		// The router declares what it needs (server.Backend); it knows
		// nothing of the daemon's packages, as moby's routers.
		{"server", true, []string{"github.com/sandboxd/sandboxd/daemon"}},
		// The configuration is a leaf that the daemon, its owners and
		// cmd/sandboxd read: it takes nothing from them (as moby's
		// daemon/config).
		{"config", true, []string{"github.com/sandboxd/sandboxd/daemon"}},
		// The account of executions knows a session only through
		// execution.Session, and the store through execution.History: it
		// takes nothing under daemon/ (the router's rule above keeps
		// daemon/server from it).
		{"execution", true, []string{"github.com/sandboxd/sandboxd/daemon"}},
		// Host checks take probes from their caller: the runtime may
		// depend on them, never they on it.
		{"../internal/hostcheck", true, []string{"github.com/sandboxd/sandboxd/isolation"}},
		{".", false, []string{"github.com/opencontainers/runc/libcontainer", "github.com/sandboxd/sandboxd/isolation/agent"}},
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
			for _, imp := range f.Imports {
				p, _ := strconv.Unquote(imp.Path.Value)
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
