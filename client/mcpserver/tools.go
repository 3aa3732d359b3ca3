package mcpserver

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/client"
)

// The tools' inputs. A jsonschema tag is the property's description, for
// the model; a field without omitempty is required.

// SessionRef names the session a tool works in.
type SessionRef struct {
	SessionID string `json:"session_id,omitempty" jsonschema:"the session to use; leave it out to use this server's own session (made on first use)"`
}

// RunPythonInput is run_python's.
type RunPythonInput struct {
	Code string `json:"code" jsonschema:"Python code; variables, imports and functions persist between calls in the same session; the value of a last expression is returned as the result"`
	SessionRef
	TimeoutS float64 `json:"timeout_s,omitempty" jsonschema:"seconds the code may run (default: the session's)"`
	Context  string  `json:"context,omitempty" jsonschema:"the code context to run in (create_context made it), with its own variables; leave it out for the session's default interpreter"`
}

// RunShellInput is run_shell's.
type RunShellInput struct {
	Command string `json:"command" jsonschema:"a shell command line, run by /bin/sh in /workspace"`
	SessionRef
	TimeoutS float64 `json:"timeout_s,omitempty" jsonschema:"seconds the command may run (default: the session's)"`
	Context  string  `json:"context,omitempty" jsonschema:"a code context whose folder the command runs in (create_context made it); leave it out for /workspace"`
}

// WriteFileInput is write_file's.
type WriteFileInput struct {
	Path     string `json:"path" jsonschema:"the file's path; relative paths are under /workspace; folders are made"`
	Content  string `json:"content" jsonschema:"the file's content"`
	Encoding string `json:"encoding,omitempty" jsonschema:"utf-8 (the default) or base64 for binary content"`
	SessionRef
}

// ReadFileInput is read_file's.
type ReadFileInput struct {
	Path string `json:"path" jsonschema:"the file's (or folder's) path; relative paths are under /workspace"`
	SessionRef
}

// InstallPackagesInput is install_packages's.
type InstallPackagesInput struct {
	Packages []string `json:"packages" jsonschema:"pip requirements such as numpy or requests>=2"`
	SessionRef
}

// CreateSessionInput is create_session's.
type CreateSessionInput struct {
	Template string            `json:"template,omitempty" jsonschema:"the session's template (default python)"`
	MemoryMB int64             `json:"memory_mb,omitempty" jsonschema:"memory limit in MiB"`
	CPUs     float64           `json:"cpus,omitempty" jsonschema:"CPU limit in cores"`
	TimeoutS int               `json:"timeout_s,omitempty" jsonschema:"default seconds an execution may run"`
	Network  string            `json:"network,omitempty" jsonschema:"none (the default: no network), allowlist (only what allow names) or open"`
	Allow    []string          `json:"allow,omitempty" jsonschema:"hosts, *.domains or CIDRs the session may reach (network allowlist)"`
	Labels   map[string]string `json:"labels,omitempty" jsonschema:"labels to find the session by"`
	// DeadlineS is deadline_s: 0 (absent) is none, as a model leaves it.
	DeadlineS int `json:"deadline_s,omitempty" jsonschema:"end the session this many seconds from now, whatever it is doing (stopped, files kept); absent: no deadline"`
	// Volumes are api.VolumeMount's, as a model writes them.
	Volumes []VolumeInput `json:"volumes,omitempty" jsonschema:"volumes of yours to mount (list_volumes): files kept across sessions and shared with your other sessions"`
	// Snapshot starts the session from one (api.CreateSessionRequest's).
	Snapshot string `json:"snapshot,omitempty" jsonschema:"a snapshot of yours (snapshot_session, list_snapshots), by id or name, to start the session from: its files and settings (then give only labels, deadline_s and volumes beside it)"`
	// Checkpoints is api.CreateSessionRequest's: 0 (absent) is none.
	Checkpoints int `json:"checkpoints,omitempty" jsonschema:"keep the state before each of the session's last this many executions (1 to 16), so undo can take it back; absent: none"`
}

// VolumeInput is one volume create_session mounts.
type VolumeInput struct {
	Name     string `json:"name" jsonschema:"the volume's name"`
	Path     string `json:"path" jsonschema:"where the session sees it, an absolute path such as /data"`
	ReadOnly bool   `json:"read_only,omitempty" jsonschema:"mount it read-only"`
}

// DeleteSessionInput is delete_session's.
type DeleteSessionInput struct {
	SessionID string `json:"session_id" jsonschema:"the session to delete, with its files"`
}

// ListSessionsInput is list_sessions's.
type ListSessionsInput struct {
	Labels map[string]string `json:"labels,omitempty" jsonschema:"only sessions with all these labels"`
}

// The tools' structured outputs.

// ExecOutput is what run_python, run_shell and install_packages return.
type ExecOutput struct {
	SessionID string `json:"session_id"`
	// SessionCreated says the call made the session (the server's own).
	SessionCreated bool           `json:"session_created,omitempty"`
	Status         string         `json:"status"`
	ExitCode       int            `json:"exit_code"`
	Stdout         string         `json:"stdout,omitempty"`
	Stderr         string         `json:"stderr,omitempty"`
	Result         *string        `json:"result,omitempty"`
	Error          *api.ExecError `json:"error,omitempty"`
	Images         int            `json:"images,omitempty"`
	Truncated      bool           `json:"truncated,omitempty"`
	StateReset     bool           `json:"state_reset,omitempty"`
	DurationMS     float64        `json:"duration_ms"`
}

// FileOutput is what write_file and read_file return.
type FileOutput struct {
	SessionID      string `json:"session_id"`
	SessionCreated bool   `json:"session_created,omitempty"`
	Path           string `json:"path"`
	Size           int64  `json:"size"`
	// Encoding is how Content holds the file: utf-8, or base64 for what is
	// not text; "" for a folder (Entries) or an image (image content).
	Encoding string         `json:"encoding,omitempty"`
	Content  string         `json:"content,omitempty"`
	Entries  []api.FileInfo `json:"entries,omitempty"`
	MIME     string         `json:"mime,omitempty"`
}

// SessionOutput describes one session.
type SessionOutput struct {
	ID        string            `json:"id"`
	Status    string            `json:"status"`
	Template  string            `json:"template"`
	Network   string            `json:"network"`
	CreatedAt time.Time         `json:"created_at"`
	Labels    map[string]string `json:"labels,omitempty"`
	// Deadline is when the session ends whatever it does (absent: none).
	Deadline *time.Time `json:"deadline,omitempty"`
	// Mine says this server made it (and deletes it when it closes).
	Mine bool `json:"mine,omitempty"`
	// Checkpoints is how many executions undo can go back (absent: none).
	Checkpoints int `json:"checkpoints,omitempty"`
}

// SessionsOutput is list_sessions's.
type SessionsOutput struct {
	Sessions []SessionOutput `json:"sessions"`
}

// DeletedOutput is delete_session's.
type DeletedOutput struct {
	SessionID string `json:"session_id"`
	Deleted   bool   `json:"deleted"`
}

func (s *Server) addTools() {
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "run_python", Description: "Run Python code in a sandbox session's persistent interpreter " +
		"and return its output, the value of its last expression, any exception, and figures (matplotlib) as images."}, s.runPython)
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "run_shell", Description: "Run a shell command in a sandbox session and return its exit code and output."}, s.runShell)
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "write_file", Description: "Write a file into a sandbox session."}, s.writeFile)
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "read_file", Description: "Read a file of a sandbox session " +
		"(text as text, images as images, other binary as base64), or list a folder."}, s.readFile)
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "install_packages", Description: "Install Python packages with pip into a sandbox session " +
		"(from the daemon's package index; the session needs no network of its own)."}, s.installPackages)
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "create_session", Description: "Create a new sandbox session and return its id; " +
		"sessions this server creates are deleted when it stops."}, s.createSession)
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "list_sessions", Description: "List the sandbox sessions you may use."}, s.listSessions)
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "delete_session", Description: "Delete a sandbox session and its files."}, s.deleteSession)
	s.addJobTools()
	s.addProcessTools()
	s.addContextTools()
	s.addVolumeTools()
	s.addSnapshotTools()
	s.addUndoTools()
}

// cancelInterrupts is the output callback of the tools' executions: with
// one, the execution streams, and the daemon interrupts a streamed
// execution whose client hangs up. So an MCP client's cancellation of a
// call (the user pressed stop) interrupts the code, as Ctrl-C would,
// instead of leaving it to run to its timeout.
func cancelInterrupts(api.Event) {}

func (s *Server) runPython(ctx context.Context, _ *mcp.CallToolRequest, in RunPythonInput) (*mcp.CallToolResult, ExecOutput, error) {
	return s.exec(ctx, in.SessionID, func(id string) (*api.Execution, error) {
		return s.c.Exec(ctx, id, &api.ExecRequest{Language: api.LanguagePython, Code: in.Code, TimeoutS: seconds(in.TimeoutS), Context: in.Context}, cancelInterrupts)
	})
}

func (s *Server) runShell(ctx context.Context, _ *mcp.CallToolRequest, in RunShellInput) (*mcp.CallToolResult, ExecOutput, error) {
	return s.exec(ctx, in.SessionID, func(id string) (*api.Execution, error) {
		return s.c.Exec(ctx, id, &api.ExecRequest{Language: api.LanguageShell, Code: in.Command, TimeoutS: seconds(in.TimeoutS), Context: in.Context}, cancelInterrupts)
	})
}

func (s *Server) installPackages(ctx context.Context, _ *mcp.CallToolRequest, in InstallPackagesInput) (*mcp.CallToolResult, ExecOutput, error) {
	if len(in.Packages) == 0 {
		return nil, ExecOutput{}, fmt.Errorf("packages is empty: name at least one")
	}
	return s.exec(ctx, in.SessionID, func(id string) (*api.Execution, error) {
		return s.c.InstallPackages(ctx, id, &api.PackagesRequest{Packages: in.Packages}, nil)
	})
}

// exec runs one execution in the call's session and turns it into the
// tool's result.
func (s *Server) exec(ctx context.Context, sid string, run func(id string) (*api.Execution, error)) (*mcp.CallToolResult, ExecOutput, error) {
	var ex *api.Execution
	t, err := s.inSession(ctx, sid, func(id string) (err error) {
		ex, err = run(id)
		return err
	})
	if err != nil {
		return nil, ExecOutput{}, toolError(err)
	}
	out := ExecOutput{
		SessionID: t.id, SessionCreated: t.made, Status: ex.Status, ExitCode: ex.ExitCode,
		Stdout: ex.Stdout, Stderr: ex.Stderr, Result: ex.Result, Error: ex.Error,
		Truncated: ex.Truncated, StateReset: ex.StateReset, DurationMS: ex.DurationMS,
	}
	res := &mcp.CallToolResult{}
	text := execText(t, ex)
	res.Content = append(res.Content, &mcp.TextContent{Text: cutText(text, s.opts.MaxText)})
	for _, o := range ex.Outputs {
		if !rasterImage(o.MIME) {
			// A rich display (a table as HTML) reaches the model as its
			// text form, which every model reads.
			if text := o.Bundle["text/plain"]; text != "" {
				res.Content = append(res.Content, &mcp.TextContent{Text: cutText("display ("+o.MIME+"):\n"+text, s.opts.MaxText/4)})
			}
			continue
		}
		data, err := base64.StdEncoding.DecodeString(o.Data)
		if err != nil {
			continue
		}
		res.Content = append(res.Content, &mcp.ImageContent{Data: data, MIMEType: o.MIME})
		out.Images++
	}
	// Cut the same way as the text, so the structured copy does not carry
	// what the text left out.
	out.Stdout, out.Stderr = cutText(out.Stdout, s.opts.MaxText/2), cutText(out.Stderr, s.opts.MaxText/2)
	return res, out, nil
}

func (s *Server) writeFile(ctx context.Context, _ *mcp.CallToolRequest, in WriteFileInput) (*mcp.CallToolResult, FileOutput, error) {
	var data []byte
	switch strings.ToLower(in.Encoding) {
	case "", "utf-8", "utf8", "text":
		data = []byte(in.Content)
	case "base64":
		b, err := base64.StdEncoding.DecodeString(in.Content)
		if err != nil {
			return nil, FileOutput{}, fmt.Errorf("content is not base64: %v", err)
		}
		data = b
	default:
		return nil, FileOutput{}, fmt.Errorf("encoding %s: use utf-8 or base64", api.Quote(in.Encoding))
	}
	var w *api.FileWritten
	t, err := s.inSession(ctx, in.SessionID, func(id string) (err error) {
		w, err = s.c.PutFile(ctx, id, in.Path, bytes.NewReader(data))
		return err
	})
	if err != nil {
		return nil, FileOutput{}, toolError(err)
	}
	out := FileOutput{SessionID: t.id, SessionCreated: t.made, Path: w.Path, Size: w.Size}
	return textResult(fmt.Sprintf("%swrote %d bytes to %s", sessionLine(t), w.Size, w.Path)), out, nil
}

func (s *Server) readFile(ctx context.Context, _ *mcp.CallToolRequest, in ReadFileInput) (*mcp.CallToolResult, FileOutput, error) {
	var (
		data []byte
		list *api.FileList
	)
	// One byte over the bound tells a file that is too big.
	limit := int64(s.opts.MaxText)*3/4 + 1
	t, err := s.inSession(ctx, in.SessionID, func(id string) error {
		r, l, err := s.c.GetFile(ctx, id, in.Path)
		if err != nil {
			return err
		}
		list = l
		if r == nil {
			return nil
		}
		defer r.Close()
		data, err = io.ReadAll(io.LimitReader(r, limit))
		return err
	})
	if err != nil {
		return nil, FileOutput{}, toolError(err)
	}
	out := FileOutput{SessionID: t.id, SessionCreated: t.made, Path: in.Path}
	if list != nil {
		out.Entries = list.Entries
		var b strings.Builder
		fmt.Fprintf(&b, "%s%s is a folder of %d entries:\n", sessionLine(t), in.Path, len(list.Entries))
		for _, e := range list.Entries {
			fmt.Fprintf(&b, "%s\t%s\t%d\n", e.Type, e.Name, e.Size)
		}
		return textResult(cutText(b.String(), s.opts.MaxText)), out, nil
	}
	if int64(len(data)) == limit {
		return nil, FileOutput{}, fmt.Errorf("%s is larger than %d bytes, more than a tool result carries: read part of it with run_shell (head, tail, grep)", in.Path, limit-1)
	}
	out.Size = int64(len(data))
	mime := sniff(data)
	switch {
	case rasterImage(mime):
		out.MIME = mime
		return &mcp.CallToolResult{Content: []mcp.Content{
			&mcp.TextContent{Text: fmt.Sprintf("%s%s: %s, %d bytes", sessionLine(t), in.Path, mime, len(data))},
			&mcp.ImageContent{Data: data, MIMEType: mime},
		}}, out, nil
	case utf8.Valid(data):
		out.Encoding, out.Content = "utf-8", string(data)
		return textResult(sessionLine(t) + string(data)), out, nil
	default:
		out.Encoding, out.Content = "base64", base64.StdEncoding.EncodeToString(data)
		return textResult(fmt.Sprintf("%s%s is binary (%d bytes), base64:\n%s", sessionLine(t), in.Path, len(data), out.Content)), out, nil
	}
}

func (s *Server) createSession(ctx context.Context, _ *mcp.CallToolRequest, in CreateSessionInput) (*mcp.CallToolResult, SessionOutput, error) {
	req := s.opts.Create
	if in.Snapshot != "" {
		req = s.fromSnapshot(in.Snapshot)
	}
	if in.Template != "" {
		req.Template = in.Template
	}
	if in.MemoryMB != 0 {
		req.MemoryMB = &in.MemoryMB
	}
	if in.CPUs != 0 {
		req.CPUs = &in.CPUs
	}
	if in.TimeoutS != 0 {
		req.TimeoutS = &in.TimeoutS
	}
	if in.Network != "" || len(in.Allow) > 0 {
		req.Network, req.Allow = in.Network, in.Allow
		if req.Network == "" {
			req.Network = api.NetworkAllowlist
		}
	}
	if len(in.Labels) > 0 {
		req.Labels = in.Labels
	}
	if in.DeadlineS != 0 {
		req.DeadlineS = &in.DeadlineS
	}
	for _, v := range in.Volumes {
		req.Volumes = append(req.Volumes, api.VolumeMount{Name: v.Name, Path: v.Path, ReadOnly: v.ReadOnly})
	}
	if in.Checkpoints != 0 {
		req.Checkpoints = in.Checkpoints
	}
	sess, err := s.create(ctx, req)
	if err != nil {
		return nil, SessionOutput{}, toolError(err)
	}
	out := s.sessionOutput(sess)
	undo := ""
	if sess.Checkpoints > 0 {
		undo = fmt.Sprintf("; undo can take back its last %d executions", sess.Checkpoints)
	}
	return textResult(fmt.Sprintf("created session %s (template %s, network %s)%s", sess.ID, sess.Template, sess.Network, undo)), out, nil
}

func (s *Server) listSessions(ctx context.Context, _ *mcp.CallToolRequest, in ListSessionsInput) (*mcp.CallToolResult, SessionsOutput, error) {
	list, err := s.c.ListSessions(ctx, in.Labels)
	if err != nil {
		return nil, SessionsOutput{}, toolError(err)
	}
	out := SessionsOutput{Sessions: []SessionOutput{}}
	var b strings.Builder
	fmt.Fprintf(&b, "%d sessions\n", len(list))
	for i := range list {
		so := s.sessionOutput(&list[i])
		out.Sessions = append(out.Sessions, so)
		mine := ""
		if so.Mine {
			mine = "\t(this server's)"
		}
		fmt.Fprintf(&b, "%s\t%s\t%s\t%s%s\n", so.ID, so.Status, so.Template, so.CreatedAt.Format(time.RFC3339), mine)
	}
	return textResult(cutText(b.String(), s.opts.MaxText)), out, nil
}

func (s *Server) deleteSession(ctx context.Context, _ *mcp.CallToolRequest, in DeleteSessionInput) (*mcp.CallToolResult, DeletedOutput, error) {
	if in.SessionID == "" {
		return nil, DeletedOutput{}, fmt.Errorf("session_id is empty: name the session to delete")
	}
	if err := s.c.DeleteSession(ctx, in.SessionID); err != nil {
		return nil, DeletedOutput{}, toolError(err)
	}
	s.forget(in.SessionID)
	return textResult("deleted session " + in.SessionID), DeletedOutput{SessionID: in.SessionID, Deleted: true}, nil
}

func (s *Server) sessionOutput(sess *api.Session) SessionOutput {
	s.mu.Lock()
	mine := s.created[sess.ID]
	s.mu.Unlock()
	return SessionOutput{ID: sess.ID, Status: sess.Status, Template: sess.Template, Network: sess.Network,
		CreatedAt: sess.CreatedAt, Labels: sess.Labels, Deadline: sess.Deadline, Mine: mine, Checkpoints: sess.Checkpoints}
}

// toolError is what the model reads of a failed call: the daemon's
// sentence, and for a request the daemon refused as too much for now, when
// to try again.
func toolError(err error) error {
	if d, ok := client.RetryAfter(err); ok {
		return fmt.Errorf("%w (try again in %s)", err, d.Round(time.Second))
	}
	return err
}

func seconds(s float64) *float64 {
	if s <= 0 {
		return nil
	}
	return &s
}

func textResult(text string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}
}

// rasterImage says whether an image of type mime goes to the model as an
// image: the model APIs behind MCP clients take these and refuse the
// others (SVG), which stay text or base64.
func rasterImage(mime string) bool {
	switch mime {
	case "image/png", "image/jpeg", "image/gif", "image/webp":
		return true
	}
	return false
}
