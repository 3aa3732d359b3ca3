package mcpgateway

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/daemon/config"
	"github.com/sandboxd/sandboxd/internal/mcptest"
	"github.com/sandboxd/sandboxd/internal/testutil"
)

// The test binary is also the stdio server of the tests.
const serverEnv = "SANDBOXD_MCPGATEWAY_TEST_SERVER"

func TestMain(m *testing.M) {
	if os.Getenv(serverEnv) == "1" {
		if err := mcptest.New().Run(context.Background(), &mcp.StdioTransport{}); err != nil {
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// calls collects what the gateway tells.
type calls struct {
	mu  sync.Mutex
	all []Call
}

func (c *calls) tell(call Call) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.all = append(c.all, call)
}

func (c *calls) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.all)
}

func (c *calls) last() Call {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.all) == 0 {
		return Call{}
	}
	return c.all[len(c.all)-1]
}

// testGateway is a gateway of two servers, the test binary over stdio
// ("tools") and over HTTP ("web"), and "other", granted to no session.
func testGateway(t *testing.T) (*Gateway, *calls) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// The test binary lies in a folder only its user may enter: as root,
	// the server runs as that user, not as the default nobody.
	user := ""
	if os.Geteuid() == 0 {
		user = "0"
	}
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return mcptest.New() }, nil)
	web := httptest.NewServer(h)
	t.Cleanup(web.Close)
	cfg := config.MCP{Servers: map[string]config.MCPServer{
		"tools": {Command: []string{exe}, Env: map[string]string{serverEnv: "1"}, User: user,
			Tools: []string{"echo", "add", "hang", "big", "fail", "pid"}, TimeoutS: 5, MaxBytes: 10_000},
		"web":   {URL: web.URL, Tools: []string{"echo"}},
		"other": {URL: web.URL, Tools: []string{config.MCPAllTools}},
	}}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	c := &calls{}
	g := New(cfg, t.TempDir(), slog.New(slog.DiscardHandler), c.tell)
	t.Cleanup(g.Shutdown)
	return g, c
}

// open opens session id's gateway in a temporary folder and returns its
// socket's path.
func open(t *testing.T, g *Gateway, id string, servers ...string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), id)
	if err := g.Open(id, servers, dir, Owner{UID: os.Getuid(), GID: os.Getgid()}); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, api.MCPGatewaySocket)
}

// client is one connection to a gateway socket.
type client struct {
	c net.Conn
	r *bufio.Reader
}

func dial(t *testing.T, sock string) *client {
	t.Helper()
	c, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &client{c: c, r: bufio.NewReader(c)}
}

func (cl *client) send(t *testing.T, line string) api.MCPAnswer {
	t.Helper()
	_ = cl.c.SetDeadline(time.Now().Add(20 * time.Second))
	if _, err := io.WriteString(cl.c, line+"\n"); err != nil {
		t.Fatal(err)
	}
	b, err := cl.r.ReadBytes('\n')
	if err != nil {
		t.Fatal(err)
	}
	var ans api.MCPAnswer
	if err := json.Unmarshal(b, &ans); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	return ans
}

func TestGatewayCalls(t *testing.T) {
	g, told := testGateway(t)
	cl := dial(t, open(t, g, "s1", "tools", "web"))
	for _, tc := range []struct {
		name, req string
		outcome   string // what the gateway tells ("" for none)
		want      string // in the result, or the error's code
	}{
		{"allowed tool", `{"op":"call","server":"tools","tool":"echo","arguments":{"text":"hi"}}`, api.MCPOutcomeOK, `"structuredContent":{"text":"hi"}`},
		{"op defaults to call", `{"server":"tools","tool":"add","arguments":{"a":2,"b":3}}`, api.MCPOutcomeOK, `{"sum":5}`},
		{"over HTTP", `{"server":"web","tool":"echo","arguments":{"text":"web"}}`, api.MCPOutcomeOK, `{"text":"web"}`},
		{"tool not allowed", `{"server":"tools","tool":"secret"}`, api.MCPOutcomeRefused, api.MCPOutcomeRefused},
		{"tool not allowed over HTTP", `{"server":"web","tool":"add","arguments":{"a":1,"b":1}}`, api.MCPOutcomeRefused, api.MCPOutcomeRefused},
		{"server not granted", `{"server":"other","tool":"echo","arguments":{"text":"x"}}`, api.MCPOutcomeRefused, api.MCPOutcomeRefused},
		{"server unknown", `{"server":"nope","tool":"echo"}`, api.MCPOutcomeRefused, api.MCPOutcomeRefused},
		{"tool fails", `{"server":"tools","tool":"fail"}`, api.MCPOutcomeToolError, `"isError":true`},
		{"answer too large", `{"server":"tools","tool":"big","arguments":{"n":20000}}`, api.MCPOutcomeTooLarge, api.MCPOutcomeTooLarge},
		{"answer under the cap", `{"server":"tools","tool":"big","arguments":{"n":2000}}`, api.MCPOutcomeOK, strings.Repeat("x", 2000)},
		{"not JSON", `call echo`, "", api.MCPOutcomeInvalid},
		{"arguments not an object", `{"server":"tools","tool":"echo","arguments":[1]}`, "", api.MCPOutcomeInvalid},
		{"unknown op", `{"op":"delete"}`, "", api.MCPOutcomeInvalid},
		{"unknown field", `{"server":"tools","tool":"echo","as_root":true}`, "", api.MCPOutcomeInvalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := told.count()
			ans := cl.send(t, tc.req)
			got := string(ans.Result)
			if ans.Error != nil {
				got = ans.Error.Code
			}
			if !strings.Contains(got, tc.want) {
				t.Errorf("answer %s %+v, want %q", ans.Result, ans.Error, tc.want)
			}
			if tc.outcome == "" {
				if told.count() != before {
					t.Errorf("a malformed request was told as a call: %+v", told.last())
				}
				return
			}
			if c := told.last(); c.Session != "s1" || c.Outcome != tc.outcome {
				t.Errorf("told %+v, want outcome %s", c, tc.outcome)
			}
		})
	}
}

func TestGatewayTimeoutRestartsServer(t *testing.T) {
	g, told := testGateway(t)
	cl := dial(t, open(t, g, "s1", "tools"))
	pid := func() int {
		ans := cl.send(t, `{"server":"tools","tool":"pid"}`)
		var r struct {
			Structured struct{ PID int } `json:"structuredContent"`
		}
		if err := json.Unmarshal(ans.Result, &r); err != nil || r.Structured.PID == 0 {
			t.Fatalf("pid: %s %+v %v", ans.Result, ans.Error, err)
		}
		return r.Structured.PID
	}
	first := pid()
	start := time.Now()
	ans := cl.send(t, `{"server":"tools","tool":"hang","timeout_s":0.5}`)
	if ans.Error == nil || ans.Error.Code != api.MCPOutcomeTimeout {
		t.Fatalf("a hanging tool: %s %+v", ans.Result, ans.Error)
	}
	if took := time.Since(start); took > 4*time.Second {
		t.Errorf("a 0.5 s timeout took %s", took)
	}
	if c := told.last(); c.Outcome != api.MCPOutcomeTimeout || c.Tool != "hang" {
		t.Errorf("told %+v", c)
	}
	// The hung server is killed; the next call has a new one.
	testutil.WaitProcessGone(t, first, 10*time.Second)
	if second := pid(); second == first {
		t.Errorf("the server that hung still serves")
	}
}

func TestGatewayCloseEndsServers(t *testing.T) {
	g, _ := testGateway(t)
	sock := open(t, g, "s1", "tools")
	cl := dial(t, sock)
	ans := cl.send(t, `{"server":"tools","tool":"pid"}`)
	var r struct {
		Structured struct{ PID int } `json:"structuredContent"`
	}
	if err := json.Unmarshal(ans.Result, &r); err != nil || r.Structured.PID == 0 {
		t.Fatalf("pid: %s %+v", ans.Result, ans.Error)
	}
	g.Close("s1")
	testutil.WaitProcessGone(t, r.Structured.PID, 10*time.Second)
	if c, err := net.Dial("unix", sock); err == nil {
		c.Close()
		t.Errorf("a closed gateway still accepts")
	}
	// Opened again (the session started again), it serves.
	if err := g.Open("s1", []string{"tools"}, filepath.Dir(sock), Owner{UID: os.Getuid(), GID: os.Getgid()}); err != nil {
		t.Fatal(err)
	}
	if ans := dial(t, sock).send(t, `{"server":"tools","tool":"echo","arguments":{"text":"again"}}`); !ans.OK {
		t.Errorf("after open again: %+v", ans.Error)
	}
}

func TestGatewayList(t *testing.T) {
	g, _ := testGateway(t)
	ans := dial(t, open(t, g, "s1", "web", "tools")).send(t, `{"op":"list"}`)
	if !ans.OK || len(ans.Servers) != 2 {
		t.Fatalf("%+v", ans)
	}
	got := map[string][]string{}
	for _, s := range ans.Servers {
		for _, tool := range s.Tools {
			got[s.Name] = append(got[s.Name], tool.Name)
			if tool.Name == "echo" && (tool.Description == "" || !strings.Contains(string(tool.InputSchema), `"text"`)) {
				t.Errorf("echo of %s: %+v", s.Name, tool)
			}
		}
	}
	if strings.Join(got["tools"], ",") != "add,big,echo,fail,hang,pid" || strings.Join(got["web"], ",") != "echo" {
		t.Errorf("listed %v: only the allowed tools of the granted servers", got)
	}
}

// TestGatewaySessionsApart checks each session's socket is its own: its
// calls are its own, and its server process is not another's.
func TestGatewaySessionsApart(t *testing.T) {
	g, told := testGateway(t)
	a, b := dial(t, open(t, g, "a", "tools")), dial(t, open(t, g, "b", "tools"))
	pids := map[string]string{}
	for name, cl := range map[string]*client{"a": a, "b": b} {
		ans := cl.send(t, `{"server":"tools","tool":"pid"}`)
		if !ans.OK {
			t.Fatalf("%s: %+v", name, ans.Error)
		}
		if c := told.last(); c.Session != name {
			t.Errorf("a call on %s's socket told as %s's", name, c.Session)
		}
		pids[name] = string(ans.Result)
	}
	if pids["a"] == pids["b"] {
		t.Errorf("two sessions share a server process: %s", pids["a"])
	}
}

func TestGatewayFolder(t *testing.T) {
	g, _ := testGateway(t)
	sock := open(t, g, "s1", "tools")
	dir := filepath.Dir(sock)
	fi, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != readOnlyDirMode() || os.Geteuid() == 0 && readOnlyDirMode() != 0o500 {
		t.Errorf("folder mode %v, want 0500 (as root): the sandbox's user reads it, no one else enters", fi.Mode())
	}
	b, err := os.ReadFile(filepath.Join(dir, api.MCPHelperModule+".py"))
	if err != nil || !strings.Contains(string(b), "def call(") {
		t.Errorf("helper module: %v", err)
	}
	if err := g.Remove("s1", dir); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("removed gateway's folder: %v", err)
	}
}

func TestGatewayConnectionCap(t *testing.T) {
	g, _ := testGateway(t)
	sock := open(t, g, "s1", "tools")
	for range maxConns {
		cl := dial(t, sock)
		if ans := cl.send(t, `{"op":"bogus"}`); ans.Error == nil {
			t.Fatal("a bogus op answered")
		}
	}
	ans := dial(t, sock)
	_ = ans.c.SetDeadline(time.Now().Add(10 * time.Second))
	b, _ := ans.r.ReadBytes('\n')
	if !strings.Contains(string(b), "connections") {
		t.Errorf("connection over the cap: %q", b)
	}
}

// TestGatewayServerOutlivesThreads: a command server lives on when OS
// threads of the daemon end (a goroutine that locked its thread and left,
// as the network namespace code does), though its Pdeathsig is the death
// of the thread that forked it.
func TestGatewayServerOutlivesThreads(t *testing.T) {
	g, _ := testGateway(t)
	cl := dial(t, open(t, g, "s1", "tools"))
	pid := func() string {
		ans := cl.send(t, `{"server":"tools","tool":"pid"}`)
		if !ans.OK {
			t.Fatalf("pid: %+v", ans.Error)
		}
		return string(ans.Result)
	}
	first := pid()
	for range 4 {
		var wg sync.WaitGroup
		for range 50 {
			wg.Go(func() {
				runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
				time.Sleep(time.Millisecond)
			})
		}
		wg.Wait()
	}
	if got := pid(); got != first {
		t.Fatalf("the server was replaced (%s, then %s): its process died with a thread", first, got)
	}
}
