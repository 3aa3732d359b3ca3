package mcpserver

import (
	"context"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Undo for agents: a model that ran something that went wrong (deleted a
// variable, overwrote a file, broke an import) takes the session back over
// its last executions instead of starting again. The session must have
// been made with checkpoints (create_session's, or the operator's for the
// server's own session); the daemon says so otherwise.

// UndoInput is undo's.
type UndoInput struct {
	SessionRef
	// Steps is the model's: 0 (absent) is one, as the daemon takes it.
	Steps int `json:"steps,omitempty" jsonschema:"how many of the last executions to take back (1 to 16; default 1)"`
}

// UndoOutput is undo's.
type UndoOutput struct {
	SessionID      string `json:"session_id"`
	SessionCreated bool   `json:"session_created,omitempty"`
	// Undone is how many executions the session went back over.
	Undone int `json:"undone"`
}

func (s *Server) addUndoTools() {
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "undo", Description: "Take a sandbox session back over its last executions (steps, default 1), " +
		"whatever their language or context: the interpreters get back their variables and imports, /workspace its files. " +
		"Only for a session made with checkpoints (create_session's checkpoints, up to that many steps); " +
		"what went over the network, /tmp and background processes are not rolled back. Returns how many were undone."}, s.undo)
}

func (s *Server) undo(ctx context.Context, _ *mcp.CallToolRequest, in UndoInput) (*mcp.CallToolResult, UndoOutput, error) {
	var n int
	t, err := s.inSession(ctx, in.SessionID, func(id string) (err error) {
		n, err = s.c.Undo(ctx, id, in.Steps)
		return err
	})
	if err != nil {
		return nil, UndoOutput{}, toolError(err)
	}
	plural := "s"
	if n == 1 {
		plural = ""
	}
	text := fmt.Sprintf("%ssession %s went back over its last %d execution%s: its variables and /workspace are as they were before them", sessionLine(t), t.id, n, plural)
	return textResult(text), UndoOutput{SessionID: t.id, SessionCreated: t.made, Undone: n}, nil
}
