package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/internal/testutil"
)

// mcpDaemon starts a daemon whose package index is one in the fake
// internet holding sbxdemo, for install_packages.
func mcpDaemon(t *testing.T) *daemon {
	t.Helper()
	f := newFakeNet(t)
	f.AddPackage(t, "sbxdemo", "1.0", "VALUE = 'installed through mcp'\n")
	return startDaemon(t, fmt.Sprintf("[network]\nsubnet6 = %q\ndns_servers = [%q]\npackage_index_url = %q\n",
		subnet6, f.DNS.String(), fmt.Sprintf("http://%s/simple", f.Web)))
}

// TestMCP drives sandboxctl mcp over stdio with the Go SDK's client, as
// an MCP client (Claude Desktop, an agent) would: every tool against the
// real daemon, state kept between run_python calls in the server's own
// session, figures as images, and every session it made gone once the
// client closes it.
func TestMCP(t *testing.T) {
	t.Parallel()
	hostOnly(t)
	d := mcpDaemon(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	other := d.session(t, &api.CreateSessionRequest{})

	cmd := exec.Command(filepath.Join(bin, "sandboxctl"), "--socket", d.socket, "mcp", "--memory", "256M", "--label", "suite=mcp")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "sandboxd-test"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect: %v\n%s", err, stderr.String())
	}
	defer cs.Close()
	if init := cs.InitializeResult(); init.ServerInfo.Name != "sandboxd" || !strings.Contains(init.Instructions, "run_python") {
		t.Errorf("initialize: %+v", init)
	}

	callTool := func(name string, args map[string]any) (*mcp.CallToolResult, string, map[string]any) {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			t.Fatalf("%s: %v\n%s", name, err, stderr.String())
		}
		var text strings.Builder
		for _, c := range res.Content {
			if tc, ok := c.(*mcp.TextContent); ok {
				text.WriteString(tc.Text)
			}
		}
		var out map[string]any
		b, _ := json.Marshal(res.StructuredContent)
		_ = json.Unmarshal(b, &out)
		return res, text.String(), out
	}

	_, text, out := callTool("run_python", map[string]any{"code": "import os\nx = 6 * 7\nprint('uid', os.getuid())"})
	sid, _ := out["session_id"].(string)
	if sid == "" || out["session_created"] != true || !strings.Contains(text, "made session "+sid) || !strings.Contains(text, "uid ") {
		t.Fatalf("first run_python: %q %v", text, out)
	}
	s, err := d.c.GetSession(ctx, sid)
	if err != nil || s.Limits.MemoryMB != 256 || s.Labels["suite"] != "mcp" || s.Labels["sandboxd.mcp"] != "true" {
		t.Fatalf("the server's session: %+v %v", s, err)
	}
	if _, text, out = callTool("run_python", map[string]any{"code": "x"}); out["result"] != "42" || out["session_id"] != sid || strings.Contains(text, "made session") {
		t.Fatalf("state between calls: %q %v", text, out)
	}
	// A call the client cancels interrupts its code (not left to run to
	// its timeout): the next call is answered at once, the state kept.
	cctx, cancelCall := context.WithCancel(ctx)
	time.AfterFunc(time.Second, cancelCall)
	if _, err := cs.CallTool(cctx, &mcp.CallToolParams{Name: "run_python", Arguments: map[string]any{"code": "import time\ntime.sleep(20)\ny = 1"}}); err == nil {
		t.Fatal("a cancelled call answered")
	}
	start := time.Now()
	if _, _, out = callTool("run_python", map[string]any{"code": "'y' in dir(), x"}); out["result"] != "(False, 42)" || time.Since(start) > 8*time.Second {
		// Once in CI (under the race packages' load) the state was gone:
		// how each execution ended says where it went.
		var ends []string
		if hist, err := d.c.Executions(ctx, sid, 10); err == nil {
			for _, h := range hist {
				ends = append(ends, fmt.Sprintf("%s %s %.0fms state_reset=%v", h.StartedAt.Format("15:04:05.000"), h.Status, h.DurationMS, h.StateReset))
			}
		}
		t.Fatalf("after a cancelled call (%s): %v\nthe session's executions: %s", time.Since(start), out, strings.Join(ends, "; "))
	}
	res, _, out := callTool("run_python", map[string]any{"code": "import matplotlib\nmatplotlib.use('Agg')\nimport matplotlib.pyplot as plt\nplt.plot([1, 2, 3])\nplt.show()"})
	var pngs int
	for _, c := range res.Content {
		if ic, ok := c.(*mcp.ImageContent); ok && ic.MIMEType == "image/png" && bytes.HasPrefix(ic.Data, []byte("\x89PNG")) {
			pngs++
		}
	}
	if pngs != 1 || out["images"] != float64(1) {
		t.Errorf("a figure: %d PNG images, %v", pngs, out)
	}
	if _, text, out = callTool("run_shell", map[string]any{"command": "echo hi; echo err >&2; exit 3"}); out["exit_code"] != float64(3) ||
		!strings.Contains(text, "stdout:\nhi\n") || !strings.Contains(text, "stderr:\nerr\n") || !strings.Contains(text, "exit code 3") {
		t.Errorf("run_shell: %q %v", text, out)
	}
	if _, text, _ = callTool("write_file", map[string]any{"path": "notes/a.txt", "content": "written by mcp\n"}); !strings.Contains(text, "/workspace/notes/a.txt") {
		t.Errorf("write_file: %q", text)
	}
	if _, text, _ = callTool("read_file", map[string]any{"path": "notes/a.txt"}); text != "written by mcp\n" {
		t.Errorf("read_file: %q", text)
	}
	if _, text, _ = callTool("read_file", map[string]any{"path": "notes"}); !strings.Contains(text, "file\ta.txt\t15") {
		t.Errorf("read_file of a folder: %q", text)
	}
	if res, text, _ = callTool("read_file", map[string]any{"path": "../../etc/shadow"}); !res.IsError {
		t.Errorf("read_file outside /workspace: %q", text)
	}
	if _, text, out = callTool("install_packages", map[string]any{"packages": []string{"sbxdemo==1.0"}}); out["status"] != "ok" || !strings.Contains(text, "Successfully installed sbxdemo-1.0") {
		t.Fatalf("install_packages: %q %v", text, out)
	}
	if _, _, out = callTool("run_python", map[string]any{"code": "import sbxdemo\nsbxdemo.VALUE"}); out["result"] != "'installed through mcp'" {
		t.Errorf("import after install_packages: %v", out)
	}

	_, text, out = callTool("create_session", map[string]any{"template": "python", "labels": map[string]string{"role": "second"}})
	second, _ := out["id"].(string)
	if second == "" || out["mine"] != true {
		t.Fatalf("create_session: %q %v", text, out)
	}
	if _, _, out = callTool("run_python", map[string]any{"code": "'x' in dir()", "session_id": second}); out["result"] != "False" {
		t.Errorf("the second session shares the first's state: %v", out)
	}
	_, text, out = callTool("list_sessions", nil)
	var ids []string
	for _, s := range out["sessions"].([]any) {
		ids = append(ids, s.(map[string]any)["id"].(string))
	}
	slices.Sort(ids)
	want := []string{sid, second, other}
	slices.Sort(want)
	if !slices.Equal(ids, want) {
		t.Errorf("list_sessions: %v, want %v\n%s", ids, want, text)
	}
	if res, text, _ = callTool("run_python", map[string]any{"code": "1", "session_id": "0000000000000000"}); !res.IsError || !strings.Contains(text, "no such session") {
		t.Errorf("a session that is not there: %v %q", res.IsError, text)
	}
	if _, _, out = callTool("delete_session", map[string]any{"session_id": second}); out["deleted"] != true {
		t.Errorf("delete_session: %v", out)
	}

	// A background process outlives its call; its output comes back from
	// an offset; pause and resume keep the interpreter.
	_, text, out = callTool("start_process", map[string]any{"command": "echo started; sleep 0.5; echo done; exit 4"})
	pid, _ := out["process"].(map[string]any)["pid"].(float64)
	if pid == 0 || out["session_id"] != sid {
		t.Fatalf("start_process: %q %v", text, out)
	}
	if _, text, _ = callTool("list_processes", nil); !strings.Contains(text, "(background)") {
		t.Errorf("list_processes: %q", text)
	}
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		_, text, out = callTool("process_logs", map[string]any{"pid": pid})
		if out["running"] == false || time.Now().After(deadline) {
			break
		}
	}
	if out["output"] != "started\ndone\n" || out["exit_code"] != float64(4) || out["next_offset"] != float64(13) {
		t.Errorf("process_logs: %q %v", text, out)
	}
	if _, _, out = callTool("process_logs", map[string]any{"pid": pid, "offset": 8}); out["output"] != "done\n" {
		t.Errorf("process_logs from 8: %v", out)
	}
	if res, text, _ := callTool("kill_process", map[string]any{"pid": 99999}); !res.IsError {
		t.Errorf("kill_process of no such process: %q", text)
	}
	// Input: given and closed, or kept open for write_stdin; the output
	// of such a process, which has no log, is read the same way.
	logsOf := func(pid float64) map[string]any {
		for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			_, text, out = callTool("process_logs", map[string]any{"pid": pid})
			if out["running"] == false || time.Now().After(deadline) {
				return out
			}
		}
	}
	_, text, out = callTool("start_process", map[string]any{"command": "tr a-z A-Z", "stdin": "fed\n", "tag": "upper"})
	fed, _ := out["process"].(map[string]any)["pid"].(float64)
	if out = logsOf(fed); out["output"] != "FED\n" || out["exit_code"] != float64(0) {
		t.Errorf("process_logs of a process given stdin: %q %v", text, out)
	}
	_, text, out = callTool("start_process", map[string]any{"command": "read a; echo got $a; read b; echo then $b; exit 2", "stdin_open": true})
	open, _ := out["process"].(map[string]any)["pid"].(float64)
	if _, text, out = callTool("write_stdin", map[string]any{"pid": open, "text": "one\n"}); out["bytes"] != float64(4) {
		t.Errorf("write_stdin: %q %v", text, out)
	}
	if _, text, out = callTool("write_stdin", map[string]any{"pid": open, "text": "two\n", "eof": true}); out["closed"] != true {
		t.Errorf("write_stdin eof: %q %v", text, out)
	}
	if out = logsOf(open); out["output"] != "got one\nthen two\n" || out["exit_code"] != float64(2) {
		t.Errorf("process_logs of a process written to: %v", out)
	}
	if res, text, _ := callTool("write_stdin", map[string]any{"pid": open, "text": "late"}); !res.IsError {
		t.Errorf("write_stdin to an ended process: %q", text)
	}
	if _, text, out = callTool("pause_session", nil); out["status"] != api.StatusPaused {
		t.Errorf("pause_session: %q %v", text, out)
	}
	if _, text, out = callTool("resume_session", nil); out["status"] != api.StatusRunning {
		t.Errorf("resume_session: %q %v", text, out)
	}
	if _, _, out = callTool("run_python", map[string]any{"code": "x"}); out["result"] != "42" {
		t.Errorf("x after pause and resume: %v", out)
	}

	// The client goes: the server deletes what it made, nothing else.
	if err := cs.Close(); err != nil {
		t.Logf("close: %v", err)
	}
	left, err := d.c.ListSessions(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(left) != 1 || left[0].ID != other {
		t.Errorf("sessions after the client left: %+v\nserver's stderr:\n%s", left, stderr.String())
	}
}

// TestMCPThirdPartyClient drives sandboxctl mcp with the official
// TypeScript SDK's client (a pinned version from npm, run by Node), so the
// server is known to work with a client that is not its own SDK's.
func TestMCPThirdPartyClient(t *testing.T) {
	t.Parallel()
	hostOnly(t)
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatal("node is not installed: make test-deps installs it")
	}
	d := startDaemon(t, "")
	work := t.TempDir()
	copySDK(t, "testdata/mcp-client", work)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	nodeTool(ctx, t, work, nil, "npm", "ci", "--ignore-scripts", "--no-audit", "--no-fund", "--cache", filepath.Join(work, ".npm"))
	run := exec.CommandContext(ctx, node, "client.mjs", filepath.Join(bin, "sandboxctl"), d.socket)
	run.Dir = work
	var stderr bytes.Buffer
	run.Stderr = &stderr
	out, err := run.Output()
	if err != nil {
		t.Fatalf("node client.mjs: %v\n%s\n%s", err, out, stderr.String())
	}
	var seen struct {
		Server struct{ Name string }
		Tools  []string
		First  struct {
			Text    string
			Session string
			Created bool
		}
		Second struct {
			Result  string
			Session string
		}
		Shell struct {
			ExitCode int `json:"exit_code"`
			Text     string
		}
		Missing struct {
			IsError bool `json:"is_error"`
			Text    string
		}
	}
	if err := json.Unmarshal(out, &seen); err != nil {
		t.Fatalf("the client's report %q: %v", out, err)
	}
	wantTools := []string{"create_context", "create_session", "delete_context", "delete_session", "fork_session", "get_execution", "install_packages", "interrupt", "kill_process",
		"list_contexts", "list_executions", "list_processes", "list_sessions", "list_snapshots", "list_volumes", "pause_session", "process_logs", "read_file", "resume_session", "run_python", "run_shell",
		"snapshot_session", "start_execution", "start_process", "undo", "write_file", "write_stdin"}
	switch {
	case seen.Server.Name != "sandboxd" || !slices.Equal(seen.Tools, wantTools):
		t.Errorf("server %+v, tools %v", seen.Server, seen.Tools)
	case !seen.First.Created || seen.First.Session == "" || !strings.Contains(seen.First.Text, "set"):
		t.Errorf("first call: %+v", seen.First)
	case seen.Second.Result != "42" || seen.Second.Session != seen.First.Session:
		t.Errorf("second call: %+v", seen.Second)
	case seen.Shell.ExitCode != 3 || !strings.Contains(seen.Shell.Text, "from-shell"):
		t.Errorf("run_shell: %+v", seen.Shell)
	case !seen.Missing.IsError || !strings.Contains(seen.Missing.Text, "no such file"):
		t.Errorf("read_file of a missing file: %+v", seen.Missing)
	}
	// The client closed the server (its stdin, then SIGTERM, without
	// waiting for it to end): its session goes all the same.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		left, err := d.c.ListSessions(ctx, nil)
		if err == nil && len(left) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("sessions left: %+v %v\n%s", left, err, stderr.String())
		}
	}
}

// TestMCPProxy runs an MCP server inside a session through sandboxctl
// mcp-proxy and drives it with the Go SDK's client, as an MCP client
// configured with "sandboxctl mcp-proxy ID -- CMD" would: the server runs
// sandboxed (the sandbox's uid, its /workspace), its stderr comes out on
// sandboxctl's, and when the client closes, the server ends and nothing of
// it stays in the session.
func TestMCPProxy(t *testing.T) {
	t.Parallel()
	hostOnly(t)
	d := startDaemon(t, "")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	id := d.session(t, &api.CreateSessionRequest{})
	src, err := os.ReadFile("testdata/mcp-server.py")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.c.PutFile(ctx, id, "server.py", bytes.NewReader(src)); err != nil {
		t.Fatal(err)
	}

	cmd := exec.Command(filepath.Join(bin, "sandboxctl"), "--socket", d.socket, "mcp-proxy", id, "--", "python3", "server.py")
	var stderr testutil.Buffer
	cmd.Stderr = &stderr
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "sandboxd-test"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect: %v\n%s", err, stderr.String())
	}
	if info := cs.InitializeResult().ServerInfo; info.Name != "sandboxed" {
		t.Errorf("server info %+v", info)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "whereami", Arguments: map[string]any{"echo": strings.Repeat("é", 100_000)}})
	if err != nil || len(res.Content) != 1 {
		t.Fatalf("call: %+v %v\n%s", res, err, stderr.String())
	}
	var where struct {
		UID       int
		Cwd       string
		Pid       int
		Echo      string
		Workspace []string
		Ours      int
	}
	if err := json.Unmarshal([]byte(res.Content[0].(*mcp.TextContent).Text), &where); err != nil {
		t.Fatal(err)
	}
	if where.UID == 0 || where.Cwd != "/workspace" || !slices.Contains(where.Workspace, "server.py") || where.Echo != strings.Repeat("é", 100_000) {
		t.Errorf("the server runs at uid %d in %s, sees %v, echoed %d bytes", where.UID, where.Cwd, where.Workspace, len(where.Echo))
	}
	// The server and its bridge: what must be gone once the client is.
	if where.Ours != 2 {
		t.Errorf("%d processes of the server and its bridge in the session, want 2", where.Ours)
	}
	if err := cs.Close(); err != nil {
		t.Logf("close: %v", err)
	}
	if cmd.ProcessState == nil || !cmd.ProcessState.Success() {
		t.Errorf("sandboxctl mcp-proxy: %v\n%s", cmd.ProcessState, stderr.String())
	}
	if !strings.Contains(stderr.String(), "sandboxed mcp server up") {
		t.Errorf("the server's stderr did not come out: %q", stderr.String())
	}
	// Nothing of the server or the bridge runs on in the session.
	// (The session runs one execution at a time: the bridge's has ended.)
	if e := d.py(t, id, "import os\nn = 0\nfor pid in filter(str.isdigit, os.listdir('/proc')):\n"+
		"    try:\n        cmd = open('/proc/%s/cmdline' % pid, 'rb').read()\n    except OSError:\n        continue\n"+
		"    n += b'server.py' in cmd or b'SANDBOXD_MCP' in cmd\nprint(n)"); strings.TrimSpace(e.Stdout) != "0" {
		t.Errorf("%s processes of the server or its bridge left in the session", strings.TrimSpace(e.Stdout))
	}

	// A command that is not there, and a session that is not there: one
	// sentence each, non-zero.
	_, errOut, code := d.ctl(t, "", "mcp-proxy", id, "--", "no-such-server")
	if code == 0 || !strings.Contains(errOut, "no-such-server") {
		t.Errorf("a missing command: exit %d, %q", code, errOut)
	}
	if _, errOut, code = d.ctl(t, "", "mcp-proxy", "0000000000000000", "--", "python3"); code != 125 || !strings.Contains(errOut, "no such session") {
		t.Errorf("a missing session: exit %d, %q", code, errOut)
	}
	if _, errOut, code = d.ctl(t, "", "mcp-proxy", id, "python3"); code != 125 || !strings.Contains(errOut, "after --") {
		t.Errorf("without --: exit %d, %q", code, errOut)
	}
}

// TestMCPProxyDrain: once the client's stdin ends, the command's stdin
// closes and its output still comes, to its end; sandboxctl exits with the
// command's code. (The port proxy cannot half-close: stdin's end used to
// end the exchange, and the output after it was lost.)
func TestMCPProxyDrain(t *testing.T) {
	t.Parallel()
	hostOnly(t)
	d := startDaemon(t, "")
	id := d.session(t, &api.CreateSessionRequest{})
	for _, tc := range []struct {
		name, stdin, script, out string
		code                     int
	}{
		{"output after stdin ends", "hi\n", "echo out1; cat; echo out2", "out1\nhi\nout2\n", 0},
		{"the exit code", "hi\n", "cat; exit 3", "hi\n", 3},
		{"no stdin", "", "cat; echo done; exit 7", "done\n", 7},
		{"much output after stdin ends", "x", "cat >/dev/null; head -c 3000000 /dev/zero | tr '\\0' a; echo", strings.Repeat("a", 3_000_000) + "\n", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, errOut, code := d.ctl(t, tc.stdin, "mcp-proxy", id, "--", "sh", "-c", tc.script)
			if out != tc.out || code != tc.code {
				t.Errorf("sandboxctl mcp-proxy -- sh -c %q: exit %d, %d bytes %.200q, want exit %d, %.200q\n%s", tc.script, code, len(out), out, tc.code, tc.out, errOut)
			}
		})
	}
}
