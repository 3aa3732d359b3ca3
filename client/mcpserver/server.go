// Package mcpserver is sandboxd as a Model Context Protocol server: the
// tools an agent calls to run code in sessions (run_python, run_shell,
// files, packages, sessions), over a client of the daemon. sandboxctl mcp
// serves it on stdio.
//
// Tools that take a session_id use the server's own session when it is
// left out: made on the first such call and said in its result. Every
// session the server made is deleted when it closes, unless told to keep
// them: an MCP client starts a server per conversation, and what a model
// forgot must not outlive it.
package mcpserver

import (
	"context"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/containerd/errdefs"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/client"
)

// LabelKey is the label every session the server makes carries, with
// LabelValue: what list_sessions and an operator can tell them by.
const (
	LabelKey   = "sandboxd.mcp"
	LabelValue = "true"
)

// Options shape a server.
type Options struct {
	// Create is the request of the sessions the server makes on its own
	// (its default session), and the defaults of create_session.
	Create api.CreateSessionRequest
	// Keep leaves the sessions the server made when it closes.
	Keep bool
	// Version is told to MCP clients.
	Version string
	// MaxText bounds the text of one tool result (0: DefaultMaxText).
	MaxText int
}

// DefaultMaxText is how much text one tool result carries at most: a
// model's context is the scarce thing, and the daemon already caps output.
const DefaultMaxText = 50_000

// Server is one MCP server over one daemon.
type Server struct {
	c    *client.Client
	opts Options
	mcp  *mcp.Server

	mu      sync.Mutex
	def     string          // the default session's id, once made
	created map[string]bool // every session made here and not deleted
}

// New returns the server; Server.MCP is what a transport runs.
func New(c *client.Client, opts Options) *Server {
	if opts.MaxText <= 0 {
		opts.MaxText = DefaultMaxText
	}
	if opts.Version == "" {
		opts.Version = "dev"
	}
	s := &Server{c: c, opts: opts, created: map[string]bool{}}
	s.mcp = mcp.NewServer(&mcp.Implementation{Name: "sandboxd", Title: "sandboxd code sandboxes", Version: opts.Version},
		&mcp.ServerOptions{Instructions: instructions})
	s.addTools()
	return s
}

const instructions = `Runs code in isolated Linux sandboxes (sandboxd sessions). ` +
	`run_python keeps its variables between calls in the same session, like notebook cells; ` +
	`create_context makes another interpreter in the session (empty, or a copy of one with from) to try approaches side by side, named by run_python's context. ` +
	`Tools that take session_id use this server's own session when it is left out (made on first use, said in the result). ` +
	`Sessions have no network unless created with one; files live in /workspace.`

// MCP is the protocol server, for Run or a transport of the caller's.
func (s *Server) MCP() *mcp.Server { return s.mcp }

// Run serves one client on t until it goes away or ctx ends, then closes.
func (s *Server) Run(ctx context.Context, t mcp.Transport) error {
	err := s.mcp.Run(ctx, t)
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	s.Close(cctx)
	return err
}

// Close deletes the sessions the server made, unless Options.Keep.
func (s *Server) Close(ctx context.Context) {
	s.mu.Lock()
	ids := slices.Sorted(maps.Keys(s.created))
	s.created, s.def = map[string]bool{}, ""
	s.mu.Unlock()
	if s.opts.Keep {
		return
	}
	for _, id := range ids {
		if err := s.c.DeleteSession(ctx, id); err != nil && !errdefs.IsNotFound(err) {
			slog.WarnContext(ctx, "delete a session the MCP server made", "session", id, "error", err)
		}
	}
}

// create makes a session from req over the server's defaults, labelled as
// the server's, and remembers it.
func (s *Server) create(ctx context.Context, req api.CreateSessionRequest) (*api.Session, error) {
	labels := maps.Clone(req.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	labels[LabelKey] = LabelValue
	req.Labels = labels
	sess, err := s.c.CreateSession(ctx, &req)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.created[sess.ID] = true
	s.mu.Unlock()
	return sess, nil
}

// forget drops id from what the server made (it was deleted).
func (s *Server) forget(id string) {
	s.mu.Lock()
	delete(s.created, id)
	if s.def == id {
		s.def = ""
	}
	s.mu.Unlock()
}

// target is the session a tool call works in: the one it names, or the
// server's own. made says the call made it.
type target struct {
	id   string
	made bool
}

// session picks the session of a tool call: id if given, else the default
// session, made now if there is none yet.
func (s *Server) session(ctx context.Context, id string) (target, error) {
	if id != "" {
		return target{id: id}, nil
	}
	s.mu.Lock()
	def := s.def
	s.mu.Unlock()
	if def != "" {
		return target{id: def}, nil
	}
	// Two first calls at once would make two defaults: the lock is held
	// only for the bookkeeping, so the second one made is kept as a plain
	// session of the server's, and both calls work.
	sess, err := s.create(ctx, s.opts.Create)
	if err != nil {
		return target{}, err
	}
	s.mu.Lock()
	if s.def == "" {
		s.def = sess.ID
	}
	s.mu.Unlock()
	return target{id: sess.ID, made: true}, nil
}

// inSession runs op in the call's session. When the default session has
// gone (deleted by someone else), it makes a new one and runs op there once
// more.
func (s *Server) inSession(ctx context.Context, id string, op func(id string) error) (target, error) {
	t, err := s.session(ctx, id)
	if err != nil {
		return t, err
	}
	err = op(t.id)
	if id == "" && !t.made && errdefs.IsNotFound(err) && s.gone(ctx, t.id) {
		s.forget(t.id)
		if t, err = s.session(ctx, ""); err != nil {
			return t, err
		}
		err = op(t.id)
	}
	return t, err
}

// gone reports whether session id is no more. A "not found" of a call
// in a session may be of what it named (a file), not of the session.
func (s *Server) gone(ctx context.Context, id string) bool {
	_, err := s.c.GetSession(ctx, id)
	return errdefs.IsNotFound(err)
}
