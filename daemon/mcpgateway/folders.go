package mcpgateway

import (
	"os"
	"path/filepath"

	"github.com/containerd/errdefs"

	"github.com/sandboxd/sandboxd/api"
)

// A session granted MCP servers has its gateway's folder under the
// gateway's root (Options.Root: under the daemon's run dir, which only
// root may enter), named for the session. Its socket is served from the
// session's first start (or its restore by a new daemon) until its
// sandbox stops, and the folder kept until the session is deleted.

// CheckGrant checks the servers a create asks for: an invalid argument
// the caller can act on.
func (g *Gateway) CheckGrant(names []string) error {
	if err := g.cfg.Check(names); err != nil {
		return api.Errorf(errdefs.ErrInvalidArgument, "%s", err.Error())
	}
	return nil
}

// Dir is the host folder of session id's gateway, which its sandbox
// binds; "" for a session granted no servers.
func (g *Gateway) Dir(id string, servers []string) string {
	if len(servers) == 0 {
		return ""
	}
	return g.folder(id)
}

func (g *Gateway) folder(id string) string { return filepath.Join(g.root, id) }

// OpenSession serves session id's gateway in its folder, if it was
// granted servers, before its sandbox starts or is restored: the folder
// is the sandbox's to bind.
func (g *Gateway) OpenSession(id string, servers []string, owner Owner) error {
	if len(servers) == 0 {
		return nil
	}
	return g.Open(id, servers, g.folder(id), owner)
}

// RemoveSession ends a deleted session's gateway and removes its folder.
func (g *Gateway) RemoveSession(id string) error { return g.Remove(id, g.folder(id)) }

// Reconcile removes the folders of sessions that keep does not know: what
// a daemon killed during a create or a delete left.
func (g *Gateway) Reconcile(keep func(id string) bool) {
	ents, err := os.ReadDir(g.root)
	if err != nil {
		return // none yet
	}
	for _, e := range ents {
		if keep(e.Name()) {
			continue
		}
		if err := os.RemoveAll(g.folder(e.Name())); err != nil {
			g.log.Warn("remove orphan MCP gateway folder", "session", e.Name(), "err", err)
		}
	}
}
