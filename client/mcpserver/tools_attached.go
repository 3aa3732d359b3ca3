package mcpserver

import (
	"context"
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"

	"github.com/containerd/errdefs"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sandboxd/sandboxd/api"
)

// Attached processes, as a model uses them: start_process with stdin (text
// fed to the command) or stdin_open (input kept open), write_stdin, and
// process_logs reading their output, which the daemon holds instead of a
// log file.

// WriteStdinInput is write_stdin's.
type WriteStdinInput struct {
	ProcessRef
	Text string `json:"text,omitempty" jsonschema:"what to write to the process's input, as is (end a line with \\n)"`
	EOF  bool   `json:"eof,omitempty" jsonschema:"close its input after the text: the command reads end of file"`
}

// WriteStdinOutput is write_stdin's.
type WriteStdinOutput struct {
	SessionID string `json:"session_id"`
	PID       int    `json:"pid"`
	Bytes     int    `json:"bytes"`
	Closed    bool   `json:"closed,omitempty"`
}

func (s *Server) addAttachedTools() {
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "write_stdin", Description: "Write text to the input of a process start_process started with stdin_open " +
		"(a REPL, a program that asks questions); eof closes its input after. process_logs reads what it answers."}, s.writeStdin)
}

// startAttached starts req's command with its input open, writes text to
// it, and closes the input unless keepOpen. A command that ended (or
// closed its input) before reading is not a failure of the call: the
// text is just not read, as in a shell pipe, and the note says so.
func (s *Server) startAttached(ctx context.Context, id string, req *api.ProcessRequest, text string, keepOpen bool) (p *api.Process, note string, err error) {
	req.Stdin = true
	if p, err = s.c.StartProcess(ctx, id, req); err != nil {
		return nil, "", err
	}
	if text == "" && keepOpen {
		return p, "its input is open: write to it with write_stdin", nil
	}
	err = s.c.WriteStdin(ctx, id, p.PID, []byte(text), !keepOpen)
	switch {
	case errdefs.IsConflict(err):
		return p, "it ended before it read its input", nil
	case err != nil:
		// A command left waiting for input nobody will send would run
		// until the session stops.
		_ = s.c.SignalProcess(ctx, id, p.PID, "KILL")
		return nil, "", fmt.Errorf("writing the input of process %d: %w", p.PID, err)
	case keepOpen:
		return p, fmt.Sprintf("wrote %d bytes to its input, still open: write more with write_stdin", len(text)), nil
	default:
		return p, fmt.Sprintf("wrote %d bytes to its input and closed it", len(text)), nil
	}
}

func (s *Server) writeStdin(ctx context.Context, _ *mcp.CallToolRequest, in WriteStdinInput) (*mcp.CallToolResult, WriteStdinOutput, error) {
	if in.Text == "" && !in.EOF {
		return nil, WriteStdinOutput{}, fmt.Errorf("text is required (or eof, to close the input)")
	}
	t, err := s.inSession(ctx, in.SessionID, func(id string) error {
		return s.c.WriteStdin(ctx, id, in.PID, []byte(in.Text), in.EOF)
	})
	if err != nil {
		return nil, WriteStdinOutput{}, toolError(err)
	}
	closed := ""
	if in.EOF {
		closed = " and closed it"
	}
	text := fmt.Sprintf("%swrote %d bytes to the input of process %d of session %s%s: process_logs reads what it answers",
		sessionLine(t), len(in.Text), in.PID, t.id, closed)
	return textResult(text), WriteStdinOutput{SessionID: t.id, PID: in.PID, Bytes: len(in.Text), Closed: in.EOF}, nil
}

// attachedLogs reads an attached process's output from offset as one
// text, stdout and stderr in the order written as a background process's
// log has them, at most limit bytes of it: what process_logs answers for a
// process that has no log file.
func (s *Server) attachedLogs(ctx context.Context, id string, pid int, offset int64, limit int, out *LogsOutput) error {
	var b strings.Builder
	next, full := offset, false
	out.Running = true
	err := s.c.ProcessOutput(ctx, id, pid, strconv.FormatInt(offset, 10), false, nil, func(o api.ProcessOutput) error {
		if o.ExitCode != nil {
			out.Running, out.ExitCode = false, o.ExitCode
			return nil
		}
		if full {
			return nil
		}
		data, err := base64.StdEncoding.DecodeString(o.DataB64)
		if err != nil {
			return fmt.Errorf("bad output line from sandboxd: %w", err)
		}
		if o.Offset > next {
			// The daemon keeps the last MiB: what was before is gone.
			fmt.Fprintf(&b, "[… %d bytes no longer kept]\n", o.Offset-next)
		}
		if room := limit - b.Len(); len(data) > room {
			// The rest comes with the next call, from next_offset.
			data, full = data[:max(room, 0)], true
		}
		b.Write(data)
		next = o.Offset + int64(len(data))
		return nil
	})
	if full {
		// A process that ended is not told so while its output is still
		// to read: the model reads on from next_offset.
		out.Running, out.ExitCode = true, nil
	}
	out.Output, out.NextOffset = b.String(), next
	return err
}
