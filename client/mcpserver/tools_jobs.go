package mcpserver

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sandboxd/sandboxd/api"
)

// Long work: an execution started without waiting (a job), looked at
// later, listed, or interrupted — so a model need not hold one call open
// for a training run.

// StartExecutionInput is start_execution's.
type StartExecutionInput struct {
	Code     string `json:"code" jsonschema:"the code: Python (the default) or, with language shell, a shell command line"`
	Language string `json:"language,omitempty" jsonschema:"python (the default) or shell"`
	SessionRef
	TimeoutS float64 `json:"timeout_s,omitempty" jsonschema:"seconds the code may run (default: the session's)"`
	Context  string  `json:"context,omitempty" jsonschema:"the code context to run in (create_context made it); leave it out for the session's default interpreter"`
}

// ExecutionRef names an execution.
type ExecutionRef struct {
	ExecutionID string `json:"execution_id" jsonschema:"the id start_execution returned"`
	SessionRef
}

// ListExecutionsInput is list_executions's.
type ListExecutionsInput struct {
	SessionRef
	Limit int `json:"limit,omitempty" jsonschema:"at most this many, newest first (default 10)"`
}

// StartedOutput is start_execution's.
type StartedOutput struct {
	SessionID      string `json:"session_id"`
	SessionCreated bool   `json:"session_created,omitempty"`
	ExecutionID    string `json:"execution_id"`
}

// ExecutionsOutput is list_executions's.
type ExecutionsOutput struct {
	SessionID  string                 `json:"session_id"`
	Executions []api.ExecutionSummary `json:"executions"`
}

// InterruptOutput is interrupt's.
type InterruptOutput struct {
	SessionID   string `json:"session_id"`
	Interrupted bool   `json:"interrupted"`
}

func (s *Server) addJobTools() {
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "start_execution", Description: "Start Python code (or a shell command) in a sandbox session without waiting for it, " +
		"for long work: returns an execution_id at once; get_execution tells how it goes. The session runs one execution at a time."}, s.startExecution)
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "get_execution", Description: "How an execution started with start_execution goes: status running with its output so far, " +
		"or its whole result once it ended."}, s.getExecution)
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "list_executions", Description: "List a session's recent executions, newest first: status, exit code, duration, CPU and memory."}, s.listExecutions)
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "interrupt", Description: "Interrupt the execution running in a session, as Ctrl-C would " +
		"(Python raises KeyboardInterrupt); the session keeps its variables."}, s.interrupt)
}

func (s *Server) startExecution(ctx context.Context, _ *mcp.CallToolRequest, in StartExecutionInput) (*mcp.CallToolResult, StartedOutput, error) {
	lang := in.Language
	if lang == "" {
		lang = api.LanguagePython
	}
	var eid string
	t, err := s.inSession(ctx, in.SessionID, func(id string) (err error) {
		eid, err = s.c.StartExec(ctx, id, &api.ExecRequest{Language: lang, Code: in.Code, TimeoutS: seconds(in.TimeoutS), Context: in.Context})
		return err
	})
	if err != nil {
		return nil, StartedOutput{}, toolError(err)
	}
	out := StartedOutput{SessionID: t.id, SessionCreated: t.made, ExecutionID: eid}
	return textResult(fmt.Sprintf("%sstarted execution %s in session %s: call get_execution to see how it goes", sessionLine(t), eid, t.id)), out, nil
}

func (s *Server) getExecution(ctx context.Context, _ *mcp.CallToolRequest, in ExecutionRef) (*mcp.CallToolResult, ExecOutput, error) {
	if in.ExecutionID == "" {
		return nil, ExecOutput{}, fmt.Errorf("execution_id is required: the id start_execution returned")
	}
	res, out, err := s.exec(ctx, in.SessionID, func(id string) (*api.Execution, error) {
		return s.c.Execution(ctx, id, in.ExecutionID)
	})
	if err == nil && out.Status == api.StatusRunning {
		res.Content = append([]mcp.Content{&mcp.TextContent{Text: "still running; the output so far:"}}, res.Content...)
	}
	return res, out, err
}

func (s *Server) listExecutions(ctx context.Context, _ *mcp.CallToolRequest, in ListExecutionsInput) (*mcp.CallToolResult, ExecutionsOutput, error) {
	limit := in.Limit
	if limit <= 0 {
		limit = 10
	}
	var list []api.ExecutionSummary
	t, err := s.inSession(ctx, in.SessionID, func(id string) (err error) {
		list, err = s.c.Executions(ctx, id, limit)
		return err
	})
	if err != nil {
		return nil, ExecutionsOutput{}, toolError(err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s%d execution(s) of session %s, newest first:\n", sessionLine(t), len(list), t.id)
	for _, e := range list {
		exit := "-"
		if e.ExitCode != nil {
			exit = fmt.Sprint(*e.ExitCode)
		}
		fmt.Fprintf(&b, "%s %s %s exit %s, %.0f ms, started %s\n", e.ID, e.Language, e.Status, exit, e.DurationMS, e.StartedAt.Format(time.RFC3339))
	}
	return textResult(b.String()), ExecutionsOutput{SessionID: t.id, Executions: list}, nil
}

func (s *Server) interrupt(ctx context.Context, _ *mcp.CallToolRequest, in SessionRef) (*mcp.CallToolResult, InterruptOutput, error) {
	var ok bool
	t, err := s.inSession(ctx, in.SessionID, func(id string) (err error) {
		ok, err = s.c.Interrupt(ctx, id)
		return err
	})
	if err != nil {
		return nil, InterruptOutput{}, toolError(err)
	}
	msg := "nothing was running in session " + t.id
	if ok {
		msg = "interrupted the execution running in session " + t.id
	}
	return textResult(sessionLine(t) + msg), InterruptOutput{SessionID: t.id, Interrupted: ok}, nil
}
