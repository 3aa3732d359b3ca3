package daemon

import (
	"os"
	"path/filepath"

	"github.com/containerd/errdefs"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/daemon/mcpgateway"
	"github.com/sandboxd/sandboxd/store"
)

// The MCP gateway of sessions granted MCP servers (package mcpgateway):
// its socket is served from the session's first start (or its restore by
// a new daemon) until its sandbox stops, and its folder kept until the
// session is deleted.

// checkMCPServers checks the servers a create asks for.
func (d *Daemon) checkMCPServers(names []string) error {
	if err := d.cfg.MCP.Check(names); err != nil {
		return api.Errorf(errdefs.ErrInvalidArgument, "%s", err.Error())
	}
	return nil
}

// gatewaysDir holds the sessions' gateway folders: under the run dir,
// which only root may enter.
func (d *Daemon) gatewaysDir() string { return filepath.Join(d.inst.stateDir(d.cfg.RunDir), "mcp") }

// gatewayDir is the host folder of a session's gateway.
func (d *Daemon) gatewayDir(id string) string { return filepath.Join(d.gatewaysDir(), id) }

// gatewayOf is the gateway folder a session's sandbox binds, "" for none.
func (d *Daemon) gatewayOf(rec *store.Record) string {
	if len(rec.MCPServers) == 0 {
		return ""
	}
	return d.gatewayDir(rec.ID)
}

// openGateway serves the session's gateway, if it has one, before its
// sandbox starts or is restored: its folder is the sandbox's to bind.
func (d *Daemon) openGateway(rec *store.Record) error {
	dir := d.gatewayOf(rec)
	if dir == "" {
		return nil
	}
	uid, gid := d.rt.HostOwner(rec.IDBase)
	return d.gateway.Open(rec.ID, rec.MCPServers, dir, mcpgateway.Owner{UID: uid, GID: gid})
}

// removeGateway ends a deleted session's gateway and removes its folder.
func (d *Daemon) removeGateway(id string) error {
	return d.gateway.Remove(id, d.gatewayDir(id))
}

// reconcileGateways removes gateway folders no session owns: what a
// daemon killed during a create or a delete left.
func (d *Daemon) reconcileGateways() {
	ents, err := os.ReadDir(d.gatewaysDir())
	if err != nil {
		return // none yet
	}
	for _, e := range ents {
		if _, ok := d.sessions.get(e.Name()); ok {
			continue
		}
		if err := os.RemoveAll(d.gatewayDir(e.Name())); err != nil {
			d.log.Warn("remove orphan MCP gateway folder", "session", e.Name(), "err", err)
		}
	}
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
	d.metrics.mcpCalls.WithLabelValues(server, c.Outcome).Inc()
	s, ok := d.sessions.get(c.Session)
	if !ok {
		return
	}
	ms := c.Duration.Milliseconds()
	_, owner := s.IDOwner()
	d.events.publish(api.SessionEvent{Type: api.EventTypeMCP, SessionID: c.Session, Server: c.Server, Tool: c.Tool,
		DurationMS: &ms, Outcome: c.Outcome}, owner)
}
