package mcpserver

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sandboxd/sandboxd/api"
)

// Code contexts: interpreters of their own in one session, so a model
// exploring several approaches keeps each one's variables apart, or forks
// a working state (from) to try something without spoiling it.

// CreateContextInput is create_context's.
type CreateContextInput struct {
	SessionRef
	From     string `json:"from,omitempty" jsonschema:"a Python context to copy (default or one create_context made): the new one starts with its variables and imports, then they diverge; leave it out for an empty interpreter"`
	Cwd      string `json:"cwd,omitempty" jsonschema:"the folder its code runs in (default /workspace; under /workspace or /tmp)"`
	Language string `json:"language,omitempty" jsonschema:"python (the default: an interpreter of its own) or shell (a working folder for run_shell)"`
}

// ListContextsInput is list_contexts's.
type ListContextsInput struct {
	SessionRef
}

// DeleteContextInput is delete_context's.
type DeleteContextInput struct {
	Context string `json:"context" jsonschema:"the context to delete, with its variables (default cannot be deleted)"`
	SessionRef
}

// ContextOutput is create_context's.
type ContextOutput struct {
	SessionID      string `json:"session_id"`
	SessionCreated bool   `json:"session_created,omitempty"`
	Context        string `json:"context"`
	Language       string `json:"language"`
	Cwd            string `json:"cwd"`
}

// ContextsOutput is list_contexts's.
type ContextsOutput struct {
	SessionID string            `json:"session_id"`
	Contexts  []api.CodeContext `json:"contexts"`
}

// ContextDeletedOutput is delete_context's.
type ContextDeletedOutput struct {
	SessionID string `json:"session_id"`
	Context   string `json:"context"`
	Deleted   bool   `json:"deleted"`
}

func (s *Server) addContextTools() {
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "create_context", Description: "Create a code context in a sandbox session: a Python interpreter of its own " +
		"(same files, separate variables), empty or a fork of another context (from: its variables and imports copied, then they diverge; " +
		"from default forks the current state). " +
		"Pass its id as context to run_python to try several approaches side by side; returns the id."}, s.createContext)
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "list_contexts", Description: "List a sandbox session's code contexts, default first."}, s.listContexts)
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "delete_context", Description: "Delete a code context of a sandbox session and its variables."}, s.deleteContext)
}

func (s *Server) createContext(ctx context.Context, _ *mcp.CallToolRequest, in CreateContextInput) (*mcp.CallToolResult, ContextOutput, error) {
	var cc *api.CodeContext
	t, err := s.inSession(ctx, in.SessionID, func(id string) (err error) {
		cc, err = s.c.CreateContext(ctx, id, api.CreateContextRequest{Language: in.Language, Cwd: in.Cwd, From: in.From})
		return err
	})
	if err != nil {
		return nil, ContextOutput{}, toolError(err)
	}
	from := ""
	if in.From != "" {
		from = ", a copy of " + in.From
	}
	out := ContextOutput{SessionID: t.id, SessionCreated: t.made, Context: cc.ID, Language: cc.Language, Cwd: cc.Cwd}
	return textResult(fmt.Sprintf("%screated %s context %s in session %s (in %s%s): pass context %q to run code in it",
		sessionLine(t), cc.Language, cc.ID, t.id, cc.Cwd, from, cc.ID)), out, nil
}

func (s *Server) listContexts(ctx context.Context, _ *mcp.CallToolRequest, in ListContextsInput) (*mcp.CallToolResult, ContextsOutput, error) {
	var list []api.CodeContext
	t, err := s.inSession(ctx, in.SessionID, func(id string) (err error) {
		list, err = s.c.Contexts(ctx, id)
		return err
	})
	if err != nil {
		return nil, ContextsOutput{}, toolError(err)
	}
	if list == nil {
		list = []api.CodeContext{}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s%d context(s) in session %s:\n", sessionLine(t), len(list), t.id)
	for _, c := range list {
		fmt.Fprintf(&b, "%s\t%s\t%s\t%s\n", c.ID, c.Language, c.Cwd, c.CreatedAt.Format(time.RFC3339))
	}
	return textResult(cutText(b.String(), s.opts.MaxText)), ContextsOutput{SessionID: t.id, Contexts: list}, nil
}

func (s *Server) deleteContext(ctx context.Context, _ *mcp.CallToolRequest, in DeleteContextInput) (*mcp.CallToolResult, ContextDeletedOutput, error) {
	if in.Context == "" {
		return nil, ContextDeletedOutput{}, fmt.Errorf("context is empty: name the context to delete (list_contexts lists them)")
	}
	t, err := s.inSession(ctx, in.SessionID, func(id string) error {
		return s.c.DeleteContext(ctx, id, in.Context)
	})
	if err != nil {
		return nil, ContextDeletedOutput{}, toolError(err)
	}
	return textResult(fmt.Sprintf("%sdeleted context %s of session %s", sessionLine(t), in.Context, t.id)),
		ContextDeletedOutput{SessionID: t.id, Context: in.Context, Deleted: true}, nil
}
