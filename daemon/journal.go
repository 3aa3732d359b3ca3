package daemon

import (
	"context"
	"log/slog"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/daemon/config"
	"github.com/sandboxd/sandboxd/daemon/mcpgateway"
	"github.com/sandboxd/sandboxd/daemon/metrics"
	"github.com/sandboxd/sandboxd/internal/logging"
	"github.com/sandboxd/sandboxd/store"
)

// journal makes what happens to sessions durable and known: a state
// change's record is written, its event published, the change counted and
// logged. It also watches each sandbox, to record at once one that dies on
// its own, and hears of the calls through the MCP gateway. Package
// session decides what may change; the journal says that it did.
type journal struct {
	sessions *table
	store    *store.Store
	events   *events
	metrics  *metrics.Metrics
	log      *slog.Logger
	// own is the context of the daemon's own work (daemon.go).
	own context.Context
	// mcpServers are the configured MCP servers, whose names label the
	// calls' metrics.
	mcpServers map[string]config.MCPServer
}

// commit makes a state change durable and known: the record is written
// (for a persistent session: an error is the caller's to answer), the
// event published, the change logged and counted.
func (j *journal) commit(ctx context.Context, s *session, action, reason string) error {
	rec := s.Snapshot()
	var err error
	if j.sessions.has(s) {
		err = j.store.PutSession(&rec)
	}
	j.publish(s, action, reason)
	switch action {
	case api.ActionStopped, api.ActionFailed, api.ActionLost, api.ActionOOM:
		j.metrics.SessionEnded(action, reason)
	}
	log := logging.From(ctx)
	if action == api.ActionFailed || action == api.ActionLost {
		log.Warn("session "+action, "session", rec.ID, "reason", reason)
	} else {
		log.Info("session "+action, "session", rec.ID, "reason", reason)
	}
	if err != nil {
		return recordErr(rec.ID, err)
	}
	return nil
}

// publish publishes an event of a persistent session; a one-shot or
// pooled sandbox's session is no one's to hear of.
func (j *journal) publish(s *session, action, reason string) {
	if !j.sessions.has(s) {
		return
	}
	id, owner := s.IDOwner()
	j.events.publish(api.SessionEvent{Action: action, SessionID: id, Reason: reason}, owner)
}

// watch notices at once when a session's sandbox dies on its own (its
// agent was killed, the host ran out of memory): the session fails, with
// how the sandbox ended as the reason.
func (j *journal) watch(s *session, sb Sandbox) {
	if sb == nil {
		return
	}
	<-sb.Exited()
	reason := sb.Exit().String()
	if !s.SetExited(sb, reason) {
		return // stopped or replaced on purpose
	}
	_ = sb.Stop()
	if sb.Exit().OOM {
		j.publish(s, api.ActionOOM, reason)
	}
	if err := j.commit(j.own, s, api.ActionFailed, reason); err != nil {
		j.log.Error("record failed session", "session", s.ID(), "err", err)
	}
}

// noticeOOM publishes an oom event when the sandbox's count of
// out-of-memory kills went up since last looked at.
func (j *journal) noticeOOM(s *session, sb Sandbox) {
	st, err := sb.Stats()
	if err != nil {
		return
	}
	if seen := s.NoteOOMKills(st.OOMKills); st.OOMKills > seen {
		j.publish(s, api.ActionOOM, "out of memory: the kernel killed a process of the session")
	}
}

// mcpCall reports a call through the gateway: its log line, metric and
// (for a persistent session) event.
func (j *journal) mcpCall(c mcpgateway.Call) {
	log := j.log.Info
	if c.Outcome != api.MCPOutcomeOK && c.Outcome != api.MCPOutcomeToolError {
		log = j.log.Warn
	}
	args := []any{"session", c.Session, "server", c.Server, "tool", c.Tool, "took", c.Duration, "outcome", c.Outcome}
	if c.Err != "" {
		args = append(args, "err", c.Err)
	}
	log("MCP call", args...)
	server := c.Server
	if _, ok := j.mcpServers[server]; !ok {
		server = "" // a name the sandbox made up: no label of its own
	}
	j.metrics.MCPCall(server, c.Outcome)
	s, ok := j.sessions.get(c.Session)
	if !ok {
		return
	}
	ms := c.Duration.Milliseconds()
	_, owner := s.IDOwner()
	j.events.publish(api.SessionEvent{Type: api.EventTypeMCP, SessionID: c.Session, Server: c.Server, Tool: c.Tool,
		DurationMS: &ms, Outcome: c.Outcome}, owner)
}
