package daemon

import (
	"github.com/sandboxd/sandboxd/daemon/mcpgateway"
	"github.com/sandboxd/sandboxd/store"
)

// The MCP gateway of sessions granted MCP servers is package
// mcpgateway's, their folders too (mcpgateway/folders.go); the daemon
// opens one at a start or restore and hears of every call.

// openGateway serves the session's gateway, if it has one, before its
// sandbox starts or is restored, owned by the sandbox's user.
func openGateway(g *mcpgateway.Gateway, rt Runtime, rec *store.Record) error {
	uid, gid := rt.HostOwner(rec.IDBase)
	return g.OpenSession(rec.ID, rec.MCPServers, mcpgateway.Owner{UID: uid, GID: gid})
}
