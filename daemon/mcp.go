package daemon

import (
	"github.com/sandboxd/sandboxd/api"
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

// tellMCPCall reports a call through the gateway: its log line, metric
// and (for a persistent session) event.
func (d *Daemon) tellMCPCall(c mcpgateway.Call) {
	log := d.log.Info
	if c.Outcome != api.MCPOutcomeOK && c.Outcome != api.MCPOutcomeToolError {
		log = d.log.Warn
	}
	args := []any{"session", c.Session, "server", c.Server, "tool", c.Tool, "took", c.Duration, "outcome", c.Outcome}
	if c.Err != "" {
		args = append(args, "err", c.Err)
	}
	log("MCP call", args...)
	server := c.Server
	if _, ok := d.cfg.MCP.Servers[server]; !ok {
		server = "" // a name the sandbox made up: no label of its own
	}
	d.metrics.MCPCall(server, c.Outcome)
	s, ok := d.sessions.get(c.Session)
	if !ok {
		return
	}
	ms := c.Duration.Milliseconds()
	_, owner := s.IDOwner()
	d.events.publish(api.SessionEvent{Type: api.EventTypeMCP, SessionID: c.Session, Server: c.Server, Tool: c.Tool,
		DurationMS: &ms, Outcome: c.Outcome}, owner)
}
