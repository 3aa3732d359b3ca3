package mcpserver

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/containerd/errdefs"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sandboxd/sandboxd/api"
)

// Background processes (a server, a watcher) that outlive the call that
// started them, and pausing a session the model will come back to.

// StartProcessInput is start_process's.
type StartProcessInput struct {
	Command string `json:"command" jsonschema:"a shell command line, run by /bin/sh in /workspace in the background: it outlives this call, until it exits or the session stops"`
	Stdin   string `json:"stdin,omitempty" jsonschema:"text written to the command's input, which is then closed (unless stdin_open)"`
	// StdinOpen keeps the input open for write_stdin: a REPL, a program
	// that asks questions.
	StdinOpen bool   `json:"stdin_open,omitempty" jsonschema:"keep the command's input open after stdin, for write_stdin (a REPL, a program that asks questions)"`
	Tag       string `json:"tag,omitempty" jsonschema:"a name for the process, shown by list_processes"`
	SessionRef
}

// ProcessRef names a process of a session.
type ProcessRef struct {
	PID int `json:"pid" jsonschema:"the process id start_process or list_processes gave"`
	SessionRef
}

// ProcessLogsInput is process_logs's.
type ProcessLogsInput struct {
	ProcessRef
	Offset int64 `json:"offset,omitempty" jsonschema:"read from this byte of its output on (the next_offset of the last call), to get only what is new"`
}

// KillProcessInput is kill_process's.
type KillProcessInput struct {
	ProcessRef
	Signal string `json:"signal,omitempty" jsonschema:"TERM (the default), KILL, INT, HUP or a number"`
}

// ProcessOutput is start_process's.
type ProcessOutput struct {
	SessionID string      `json:"session_id"`
	Process   api.Process `json:"process"`
}

// ProcessesOutput is list_processes's.
type ProcessesOutput struct {
	SessionID string        `json:"session_id"`
	Processes []api.Process `json:"processes"`
}

// LogsOutput is process_logs's.
type LogsOutput struct {
	SessionID  string `json:"session_id"`
	PID        int    `json:"pid"`
	Output     string `json:"output"`
	NextOffset int64  `json:"next_offset"`
	Running    bool   `json:"running"`
	ExitCode   *int   `json:"exit_code,omitempty"`
}

// SessionStateOutput is kill_process's, pause_session's and
// resume_session's.
type SessionStateOutput struct {
	SessionID string `json:"session_id"`
	Status    string `json:"status,omitempty"`
}

func (s *Server) addProcessTools() {
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "start_process", Description: "Start a shell command in the background in a sandbox session (a server, a watcher): " +
		"it runs on after this call, until it exits or the session stops; answers its pid. process_logs reads its output. " +
		"stdin feeds it text; stdin_open keeps its input open for write_stdin."}, s.startProcess)
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "list_processes", Description: "List a sandbox session's processes: pid, command, CPU seconds, memory; " +
		"background ones are marked."}, s.listProcesses)
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "process_logs", Description: "Read a background process's output (from offset on), and whether it still runs or how it ended."}, s.processLogs)
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "kill_process", Description: "Send a signal (TERM by default) to a process of a sandbox session."}, s.killProcess)
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "pause_session", Description: "Pause a sandbox session: every process frozen, memory and variables kept, no CPU used; " +
		"any later call in it resumes it."}, s.pauseSession)
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "resume_session", Description: "Resume a paused sandbox session where it stopped."}, s.resumeSession)
	s.addAttachedTools()
}

func (s *Server) startProcess(ctx context.Context, _ *mcp.CallToolRequest, in StartProcessInput) (*mcp.CallToolResult, ProcessOutput, error) {
	if strings.TrimSpace(in.Command) == "" {
		return nil, ProcessOutput{}, fmt.Errorf("command is required: a shell command line")
	}
	var p *api.Process
	var note string
	t, err := s.inSession(ctx, in.SessionID, func(id string) (err error) {
		req := &api.ProcessRequest{Argv: []string{"/bin/sh", "-c", in.Command}, Tag: in.Tag}
		if in.Stdin == "" && !in.StdinOpen {
			p, err = s.c.StartProcess(ctx, id, req)
			return err
		}
		p, note, err = s.startAttached(ctx, id, req, in.Stdin, in.StdinOpen)
		return err
	})
	if err != nil {
		return nil, ProcessOutput{}, toolError(err)
	}
	if note != "" {
		note = "; " + note
	}
	text := fmt.Sprintf("%sstarted process %d in session %s%s: call process_logs to read its output", sessionLine(t), p.PID, t.id, note)
	return textResult(text), ProcessOutput{SessionID: t.id, Process: *p}, nil
}

func (s *Server) listProcesses(ctx context.Context, _ *mcp.CallToolRequest, in SessionRef) (*mcp.CallToolResult, ProcessesOutput, error) {
	var list []api.Process
	t, err := s.inSession(ctx, in.SessionID, func(id string) (err error) {
		list, err = s.c.Processes(ctx, id)
		return err
	})
	if err != nil {
		return nil, ProcessesOutput{}, toolError(err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s%d process(es) in session %s:\n", sessionLine(t), len(list), t.id)
	for _, p := range list {
		mark := ""
		switch {
		case p.Attached && p.Tag != "":
			mark = " (background, attached, tag " + p.Tag + ")"
		case p.Attached:
			mark = " (background, attached)"
		case p.Detached && p.Tag != "":
			mark = " (background, tag " + p.Tag + ")"
		case p.Detached:
			mark = " (background)"
		}
		fmt.Fprintf(&b, "%d %.1fs cpu %d MiB %s%s\n", p.PID, p.CPUSeconds, p.RSSBytes>>20, p.Command, mark)
	}
	return textResult(cutText(b.String(), s.opts.MaxText)), ProcessesOutput{SessionID: t.id, Processes: list}, nil
}

func (s *Server) processLogs(ctx context.Context, _ *mcp.CallToolRequest, in ProcessLogsInput) (*mcp.CallToolResult, LogsOutput, error) {
	out := LogsOutput{PID: in.PID}
	var data []byte
	attached := false
	t, err := s.inSession(ctx, in.SessionID, func(id string) error {
		r, running, exit, err := s.c.ProcessLogs(ctx, id, in.PID, in.Offset)
		if errdefs.IsNotFound(err) {
			// No log: one started with stdin, whose output the daemon
			// holds. A pid that is neither stays not found.
			if err := s.attachedLogs(ctx, id, in.PID, in.Offset, s.opts.MaxText, &out); !errdefs.IsNotFound(err) {
				attached = true
				return err
			}
		}
		if err != nil {
			return err
		}
		defer r.Close()
		// What a result carries, and no more: the next call goes on from
		// next_offset.
		data, err = io.ReadAll(io.LimitReader(r, int64(s.opts.MaxText)))
		out.Running, out.ExitCode = running, exit
		return err
	})
	if err != nil {
		return nil, LogsOutput{}, toolError(err)
	}
	out.SessionID = t.id
	if !attached {
		out.NextOffset, out.Output = in.Offset+int64(len(data)), string(data)
	}
	out.Output = strings.ToValidUTF8(out.Output, "\uFFFD")
	state := "still runs"
	if !out.Running {
		state = "has ended"
		if out.ExitCode != nil {
			state = fmt.Sprintf("ended with exit code %d", *out.ExitCode)
		}
	}
	text := fmt.Sprintf("%sprocess %d of session %s %s; its output from byte %d (next_offset %d):\n%s",
		sessionLine(t), in.PID, t.id, state, in.Offset, out.NextOffset, out.Output)
	return textResult(text), out, nil
}

func (s *Server) killProcess(ctx context.Context, _ *mcp.CallToolRequest, in KillProcessInput) (*mcp.CallToolResult, SessionStateOutput, error) {
	t, err := s.inSession(ctx, in.SessionID, func(id string) error {
		return s.c.SignalProcess(ctx, id, in.PID, in.Signal)
	})
	if err != nil {
		return nil, SessionStateOutput{}, toolError(err)
	}
	sig := in.Signal
	if sig == "" {
		sig = "TERM"
	}
	return textResult(fmt.Sprintf("%ssent %s to process %d of session %s", sessionLine(t), sig, in.PID, t.id)), SessionStateOutput{SessionID: t.id}, nil
}

func (s *Server) pauseSession(ctx context.Context, _ *mcp.CallToolRequest, in SessionRef) (*mcp.CallToolResult, SessionStateOutput, error) {
	return s.sessionState(ctx, in, "paused", s.c.PauseSession)
}

func (s *Server) resumeSession(ctx context.Context, _ *mcp.CallToolRequest, in SessionRef) (*mcp.CallToolResult, SessionStateOutput, error) {
	return s.sessionState(ctx, in, "resumed", s.c.ResumeSession)
}

// sessionState pauses or resumes a session (op) and says its status.
func (s *Server) sessionState(ctx context.Context, in SessionRef, done string, op func(context.Context, string) (*api.Session, error)) (*mcp.CallToolResult, SessionStateOutput, error) {
	var sess *api.Session
	t, err := s.inSession(ctx, in.SessionID, func(id string) (err error) {
		sess, err = op(ctx, id)
		return err
	})
	if err != nil {
		return nil, SessionStateOutput{}, toolError(err)
	}
	text := fmt.Sprintf("%s%s session %s: it is %s", sessionLine(t), done, t.id, sess.Status)
	return textResult(text), SessionStateOutput{SessionID: t.id, Status: sess.Status}, nil
}
