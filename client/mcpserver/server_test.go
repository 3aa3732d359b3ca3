package mcpserver

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sandboxd/sandboxd/api"
)

// connect runs s on an in-memory transport and returns a client session.
func connect(t *testing.T, s *Server) *mcp.ClientSession {
	t.Helper()
	ct, st := mcp.NewInMemoryTransports()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx, st) }()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cs.Close()
		cancel()
		<-done
	})
	return cs
}

// call calls a tool and returns its text and structured content.
func call(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) (*mcp.CallToolResult, string, map[string]any) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	var text strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			text.WriteString(tc.Text)
		}
	}
	var out map[string]any
	if res.StructuredContent != nil {
		b, _ := json.Marshal(res.StructuredContent)
		_ = json.Unmarshal(b, &out)
	}
	return res, text.String(), out
}

func TestTools(t *testing.T) {
	_, c := newFakeDaemon(t)
	cs := connect(t, New(c, Options{}))
	want := map[string][]string{
		"run_python": {"code"}, "run_shell": {"command"}, "write_file": {"content", "path"}, "read_file": {"path"},
		"install_packages": {"packages"}, "create_session": nil, "list_sessions": nil, "delete_session": {"session_id"},
		"start_execution": {"code"}, "get_execution": {"execution_id"}, "list_executions": nil, "interrupt": nil,
		"start_process": {"command"}, "list_processes": nil, "process_logs": {"pid"}, "kill_process": {"pid"},
		"pause_session": nil, "resume_session": nil, "write_stdin": {"pid"},
		"create_context": nil, "list_contexts": nil, "delete_context": {"context"},
		"list_volumes": nil, "snapshot_session": nil, "fork_session": nil, "list_snapshots": nil, "undo": nil,
	}
	got := map[string]bool{}
	for tool, err := range cs.Tools(context.Background(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		got[tool.Name] = true
		b, _ := json.Marshal(tool.InputSchema)
		var schema struct {
			Type       string         `json:"type"`
			Required   []string       `json:"required"`
			Properties map[string]any `json:"properties"`
		}
		_ = json.Unmarshal(b, &schema)
		slices.Sort(schema.Required)
		if schema.Type != "object" || !slices.Equal(schema.Required, want[tool.Name]) || tool.Description == "" {
			t.Errorf("%s: schema %s, description %q; want required %v", tool.Name, b, tool.Description, want[tool.Name])
		}
		if _, takes := schema.Properties["session_id"]; takes != (tool.Name != "create_session" && tool.Name != "list_sessions" && tool.Name != "list_volumes" && tool.Name != "list_snapshots") {
			t.Errorf("%s: session_id in its schema is %v", tool.Name, takes)
		}
		if tool.OutputSchema == nil {
			t.Errorf("%s has no output schema", tool.Name)
		}
	}
	if len(got) != len(want) {
		t.Errorf("tools %v, want %v", got, want)
	}
}

// TestDefaultSession checks that calls without session_id share one
// session, made by the first and said there, and made again if it goes.
func TestDefaultSession(t *testing.T) {
	f, c := newFakeDaemon(t)
	s := New(c, Options{Create: api.CreateSessionRequest{Template: "data"}})
	cs := connect(t, s)

	_, text, out := call(t, cs, "run_python", map[string]any{"code": "x = 1"})
	if !strings.Contains(text, "made session s1") || out["session_id"] != "s1" || out["session_created"] != true {
		t.Fatalf("first call: %q %v", text, out)
	}
	_, text, out = call(t, cs, "run_shell", map[string]any{"command": "ls"})
	if strings.Contains(text, "made session") || out["session_id"] != "s1" || out["session_created"] != nil || !strings.Contains(text, "stdout:\nls\n") {
		t.Fatalf("second call: %q %v", text, out)
	}
	if f.sessions["s1"].Template != "data" || f.sessions["s1"].Labels[LabelKey] != LabelValue {
		t.Errorf("the default session: %+v", f.sessions["s1"])
	}
	// A file that is not there is not a session that is not there.
	if res, text, _ := call(t, cs, "read_file", map[string]any{"path": "missing"}); !res.IsError || !strings.Contains(text, "file missing not found") {
		t.Fatalf("read a missing file: %q", text)
	}
	if len(f.sessions) != 1 {
		t.Fatalf("sessions after a missing file: %v", f.sessions)
	}
	// Deleted behind the server's back: the next call makes another.
	f.mu.Lock()
	delete(f.sessions, "s1")
	f.mu.Unlock()
	_, text, out = call(t, cs, "run_python", map[string]any{"code": "6 * 7"})
	if out["session_id"] != "s2" || !strings.Contains(text, "made session s2") || !strings.Contains(text, "result:\n42\n") {
		t.Fatalf("after the default went: %q %v", text, out)
	}
	// delete_session of the default: the next call makes another.
	call(t, cs, "delete_session", map[string]any{"session_id": "s2"})
	if _, _, out = call(t, cs, "run_python", map[string]any{"code": "y"}); out["session_id"] != "s3" {
		t.Fatalf("after delete_session: %v", out)
	}
	if want := []string{"s1:x = 1", "s1:ls", "s2:6 * 7", "s3:y"}; !slices.Equal(f.execs, want) {
		t.Errorf("executions %q, want %q", f.execs, want)
	}
}

func TestExecResults(t *testing.T) {
	_, c := newFakeDaemon(t)
	cs := connect(t, New(c, Options{}))
	res, text, out := call(t, cs, "run_python", map[string]any{"code": "raise"})
	if res.IsError || !strings.Contains(text, "ValueError: bad") || !strings.Contains(text, "status: error (exit code 1)") || out["status"] != "error" {
		t.Errorf("an exception: %v %q %v", res.IsError, text, out)
	}
	res, _, out = call(t, cs, "run_python", map[string]any{"code": "figure"})
	var imgs [][]byte
	for _, c := range res.Content {
		if ic, ok := c.(*mcp.ImageContent); ok && ic.MIMEType == "image/png" {
			imgs = append(imgs, ic.Data)
		}
	}
	if len(imgs) != 1 || !bytes.Equal(imgs[0], pngBytes) || out["images"] != float64(1) {
		t.Errorf("a figure: %d images, %v", len(imgs), out)
	}
	// Rich displays reach the model as text, and SVG is not an image
	// for it.
	res, text, out = call(t, cs, "run_python", map[string]any{"code": "display"})
	if len(res.Content) != 2 || !strings.Contains(text, "display (text/html):\na table") || out["images"] != nil {
		t.Errorf("displays: %d contents %q %v", len(res.Content), text, out)
	}
	_, text, out = call(t, cs, "install_packages", map[string]any{"packages": []string{"numpy", "rich"}})
	if !strings.Contains(text, "pip install numpy rich") || out["status"] != "ok" {
		t.Errorf("install: %q %v", text, out)
	}
	// Errors are the tool's, for the model to read, not the protocol's.
	for _, tc := range []struct {
		tool string
		args map[string]any
		want string
	}{
		{"run_python", map[string]any{"code": "x", "session_id": "nope"}, "session nope not found"},
		{"install_packages", map[string]any{"packages": []string{}}, "packages is empty"},
		{"write_file", map[string]any{"path": "a", "content": "!!", "encoding": "base64"}, "not base64"},
		{"write_file", map[string]any{"path": "a", "content": "x", "encoding": "latin1"}, "use utf-8 or base64"},
		{"read_file", map[string]any{"path": "missing"}, "not found"},
		{"delete_session", map[string]any{"session_id": "nope"}, "not found"},
	} {
		res, text, _ := call(t, cs, tc.tool, tc.args)
		if !res.IsError || !strings.Contains(text, tc.want) {
			t.Errorf("%s %v: error %v %q, want %q", tc.tool, tc.args, res.IsError, text, tc.want)
		}
	}
	// A call without a required argument never reaches the daemon.
	if res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "run_python", Arguments: map[string]any{}}); err == nil && !res.IsError {
		t.Errorf("run_python without code: %+v", res)
	}
}

func TestFiles(t *testing.T) {
	_, c := newFakeDaemon(t)
	cs := connect(t, New(c, Options{MaxText: 1000}))
	_, text, out := call(t, cs, "write_file", map[string]any{"path": "a.txt", "content": "hi\n"})
	if out["size"] != float64(3) || !strings.Contains(text, "wrote 3 bytes to /workspace/a.txt") {
		t.Fatalf("write: %q %v", text, out)
	}
	_, text, out = call(t, cs, "read_file", map[string]any{"path": "a.txt"})
	if text != "hi\n" || out["encoding"] != "utf-8" || out["content"] != "hi\n" {
		t.Errorf("read text: %q %v", text, out)
	}
	bin := base64.StdEncoding.EncodeToString([]byte{0, 1, 0xff})
	call(t, cs, "write_file", map[string]any{"path": "b.bin", "content": bin, "encoding": "base64"})
	if _, text, out = call(t, cs, "read_file", map[string]any{"path": "b.bin"}); out["content"] != bin || !strings.Contains(text, bin) {
		t.Errorf("read binary: %q %v", text, out)
	}
	call(t, cs, "write_file", map[string]any{"path": "c.png", "content": base64.StdEncoding.EncodeToString(pngBytes), "encoding": "base64"})
	res, _, out := call(t, cs, "read_file", map[string]any{"path": "c.png"})
	if len(res.Content) != 2 || out["mime"] != "image/png" {
		t.Errorf("read image: %d contents, %v", len(res.Content), out)
	} else if ic, ok := res.Content[1].(*mcp.ImageContent); !ok || !bytes.Equal(ic.Data, pngBytes) {
		t.Errorf("read image: %+v", res.Content[1])
	}
	if _, text, out = call(t, cs, "read_file", map[string]any{"path": "."}); !strings.Contains(text, "file\ta.txt\t3") || out["entries"] == nil {
		t.Errorf("read folder: %q %v", text, out)
	}
	call(t, cs, "write_file", map[string]any{"path": "big.txt", "content": strings.Repeat("x", 2000)})
	if res, text, _ := call(t, cs, "read_file", map[string]any{"path": "big.txt"}); !res.IsError || !strings.Contains(text, "larger than 750 bytes") {
		t.Errorf("read a big file: %v %q", res.IsError, text)
	}
}

// TestSessionsEndWithTheServer checks create_session and list_sessions,
// and that what the server made goes when it closes, unless kept.
func TestSessionsEndWithTheServer(t *testing.T) {
	for _, keep := range []bool{false, true} {
		t.Run(fmt.Sprintf("keep=%v", keep), func(t *testing.T) {
			f, c := newFakeDaemon(t)
			f.sessions["other"] = &api.Session{ID: "other", Status: "running"}
			s := New(c, Options{Keep: keep})
			ct, st := mcp.NewInMemoryTransports()
			done := make(chan error, 1)
			go func() { done <- s.Run(context.Background(), st) }()
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "test"}, nil).Connect(context.Background(), ct, nil)
			if err != nil {
				t.Fatal(err)
			}
			_, text, out := call(t, cs, "create_session", map[string]any{"template": "data", "memory_mb": 256, "labels": map[string]string{"a": "b"}, "deadline_s": 60})
			if out["id"] != "s1" || out["mine"] != true || !strings.Contains(text, "created session s1 (template data") || out["deadline"] != "1970-01-01T00:01:00Z" {
				t.Fatalf("create: %q %v", text, out)
			}
			call(t, cs, "run_python", map[string]any{"code": "1"})
			_, text, out = call(t, cs, "list_sessions", nil)
			if got := len(out["sessions"].([]any)); got != 3 || !strings.Contains(text, "s2\trunning\tpython\t1970-01-01T00:00:00Z\t(this server's)") {
				t.Fatalf("list: %q %v", text, out)
			}
			_ = cs.Close()
			<-done
			f.mu.Lock()
			left := len(f.sessions)
			f.mu.Unlock()
			if want := map[bool]int{false: 1, true: 3}[keep]; left != want {
				t.Errorf("%d sessions left, want %d", left, want)
			}
		})
	}
}

func TestCutText(t *testing.T) {
	if got := cutText("short", 100); got != "short" {
		t.Errorf("cut short: %q", got)
	}
	got := cutText(strings.Repeat("é", 100), 80)
	if len(got) > 80 || !strings.Contains(got, "cut") {
		t.Errorf("cut long: %d bytes %q", len(got), got)
	}
}

// TestJobTools: start_execution answers an id at once, get_execution says
// running with the output so far or the result, list_executions lists,
// interrupt interrupts; all in the server's own session by default.
func TestJobTools(t *testing.T) {
	_, c := newFakeDaemon(t)
	cs := connect(t, New(c, Options{}))
	_, text, out := call(t, cs, "start_execution", map[string]any{"code": "slow"})
	if out["execution_id"] != "job-slow" || !strings.Contains(text, "get_execution") {
		t.Fatalf("start_execution: %q %v", text, out)
	}
	sid := out["session_id"]
	_, text, out = call(t, cs, "get_execution", map[string]any{"execution_id": "job-slow"})
	if out["status"] != api.StatusRunning || out["session_id"] != sid || !strings.Contains(text, "still running") || !strings.Contains(text, "half") {
		t.Fatalf("get_execution while running: %q %v", text, out)
	}
	if _, text, out = call(t, cs, "get_execution", map[string]any{"execution_id": "job-1"}); out["status"] != api.StatusOK || !strings.Contains(text, "done") {
		t.Fatalf("get_execution once ended: %q %v", text, out)
	}
	if _, text, out = call(t, cs, "list_executions", nil); !strings.Contains(text, "job-slow python running exit -") || len(out["executions"].([]any)) != 2 {
		t.Fatalf("list_executions: %q %v", text, out)
	}
	if _, text, out = call(t, cs, "interrupt", nil); out["interrupted"] != true || !strings.Contains(text, "interrupted") {
		t.Fatalf("interrupt: %q %v", text, out)
	}
}

// TestProcessTools: start_process starts a shell line in the background,
// list_processes marks it, process_logs reads its output from an offset
// and says how it ended, kill_process signals it, pause_session and
// resume_session say the session's status.
func TestProcessTools(t *testing.T) {
	_, c := newFakeDaemon(t)
	cs := connect(t, New(c, Options{}))
	_, text, out := call(t, cs, "start_process", map[string]any{"command": "serve"})
	p, _ := out["process"].(map[string]any)
	if p["pid"] != float64(42) || p["command"] != "/bin/sh -c serve" || !strings.Contains(text, "process_logs") {
		t.Fatalf("start_process: %q %v", text, out)
	}
	sid := out["session_id"]
	if _, text, out = call(t, cs, "list_processes", nil); !strings.Contains(text, "42 0.0s cpu 3 MiB /bin/sh -c serve (background)") || len(out["processes"].([]any)) != 2 || out["session_id"] != sid {
		t.Fatalf("list_processes: %q %v", text, out)
	}
	if _, text, out = call(t, cs, "process_logs", map[string]any{"pid": 42}); out["output"] != "line 1\nline 2\n" || out["next_offset"] != float64(14) || out["running"] != true || !strings.Contains(text, "still runs") {
		t.Fatalf("process_logs: %q %v", text, out)
	}
	if _, text, out = call(t, cs, "process_logs", map[string]any{"pid": 42, "offset": 7}); out["output"] != "line 2\n" || out["next_offset"] != float64(14) {
		t.Fatalf("process_logs from 7: %q %v", text, out)
	}
	if _, text, out = call(t, cs, "process_logs", map[string]any{"pid": 42, "offset": 14}); out["running"] != false || out["exit_code"] != float64(3) || !strings.Contains(text, "exit code 3") {
		t.Fatalf("process_logs at the end: %q %v", text, out)
	}
	if res, text, _ := call(t, cs, "process_logs", map[string]any{"pid": 7}); !res.IsError || !strings.Contains(text, "not found") {
		t.Fatalf("process_logs of no such process: %q", text)
	}
	if _, text, _ = call(t, cs, "kill_process", map[string]any{"pid": 42, "signal": "KILL"}); !strings.Contains(text, "sent KILL to process 42") {
		t.Fatalf("kill_process: %q", text)
	}
	if _, text, out = call(t, cs, "pause_session", nil); out["status"] != api.StatusPaused || !strings.Contains(text, "paused session") {
		t.Fatalf("pause_session: %q %v", text, out)
	}
	if _, text, out = call(t, cs, "resume_session", nil); out["status"] != api.StatusRunning || out["session_id"] != sid {
		t.Fatalf("resume_session: %q %v", text, out)
	}
}
