package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/internal/mcptest"
	"github.com/sandboxd/sandboxd/internal/testutil"
)

var (
	mcpToolsOnce sync.Once
	mcpToolsErr  error
)

// mcpTools builds the test MCP server (testdata/mcp-tools, package
// mcptest) into bin, once.
func mcpTools(t *testing.T) string {
	t.Helper()
	exe := filepath.Join(bin, "mcp-tools")
	mcpToolsOnce.Do(func() {
		if _, err := os.Stat(exe); err == nil {
			return // prebuilt (SANDBOXD_TEST_BIN)
		}
		out, err := exec.Command("go", "build", "-o", exe, "./testdata/mcp-tools").CombinedOutput()
		if err != nil {
			mcpToolsErr = fmt.Errorf("build mcp-tools: %v\n%s", err, out)
		}
	})
	if mcpToolsErr != nil {
		t.Fatal(mcpToolsErr)
	}
	return exe
}

// gatewayDaemon starts a daemon with three MCP servers: "tools" (the test
// server over stdio, some of its tools allowed), "web" (the same over
// HTTP, echo only) and "other" (granted to no session in the tests).
func gatewayDaemon(t *testing.T, cfg string) *daemon {
	t.Helper()
	exe := mcpTools(t)
	web := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return mcptest.New() }, nil))
	t.Cleanup(web.Close)
	return startDaemon(t, cfg+fmt.Sprintf(`
[mcp.servers.tools]
command = [%q]
tools = ["echo", "add", "hang", "big", "pid"]
timeout_s = 5
max_bytes = 20000

[mcp.servers.web]
url = %q
tools = ["echo"]

[mcp.servers.other]
command = [%q]
tools = ["*"]
`, exe, web.URL, exe))
}

// gatewayProbe is what code in a session granted tools and web runs: each
// line of its output is one check's result.
const gatewayProbe = `
from sandboxd_mcp import call, call_raw, servers, MCPError, ToolError
def code(f):
    try:
        return "answered %r" % (f(),)
    except MCPError as e:
        return e.code
print("echo", call("tools", "echo", {"text": "hi"})["text"])
print("add", call("tools", "add", {"a": 2, "b": 3})["sum"])
print("web", call("web", "echo", {"text": "over http"})["text"])
print("secret", code(lambda: call("tools", "secret")))
print("other", code(lambda: call("other", "echo", {"text": "x"})))
print("hang", code(lambda: call("tools", "hang", timeout=1)))
print("big", code(lambda: call("tools", "big", {"n": 50000})))
print("small", len(call("tools", "big", {"n": 5000})))
print("servers", sorted((s["name"], sorted(t["name"] for t in s["tools"])) for s in servers()))
`

func TestMCPGateway(t *testing.T) {
	t.Parallel()
	hostOnly(t)
	eachRuntime(t, func(t *testing.T, rt, cfg string) {
		d := gatewayDaemon(t, cfg)
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		since := time.Now()

		// The CLI grants servers; sandboxctl info lists them.
		out, errOut, code := d.ctl(t, "", "info")
		if code != 0 || !strings.Contains(out, "tools (tools: echo, add, hang, big, pid)") {
			t.Errorf("info: %d %s %s", code, out, errOut)
		}
		out, errOut, code = d.ctl(t, "", "create", "--mcp", "tools,web", "--network", "none")
		if code != 0 {
			t.Fatalf("create --mcp: %d %s", code, errOut)
		}
		a := strings.TrimSpace(out)
		t.Cleanup(func() { _ = d.c.DeleteSession(context.Background(), a) })
		if s, err := d.c.GetSession(ctx, a); err != nil || strings.Join(s.MCPServers, ",") != "tools,web" {
			t.Errorf("session: %+v %v", s, err)
		}

		e := d.py(t, a, gatewayProbe)
		if e.Status != api.StatusOK {
			t.Fatalf("probe: %+v %s", e.Error, e.Stderr)
		}
		for _, want := range []string{
			"echo hi", "add 5", "web over http",
			"secret refused", "other refused", "hang timeout", "big too_large", "small 5000",
			"servers [('tools', ['add', 'big', 'echo', 'hang', 'pid']), ('web', ['echo'])]",
		} {
			if !strings.Contains(e.Stdout, want+"\n") {
				t.Errorf("probe: no %q in\n%s", want, e.Stdout)
			}
		}
		// A shell command's Python has the helper too.
		sh := d.sh(t, a, `python3 -c 'from sandboxd_mcp import call; print(call("tools", "echo", {"text": "from sh"})["text"])'`)
		if strings.TrimSpace(sh.Stdout) != "from sh" {
			t.Errorf("from a shell command: %q %s", sh.Stdout, sh.Stderr)
		}

		// Every call is an event of the session's.
		evs := gatewayEvents(t, d, ctx, since, a)
		for _, want := range []string{"tools.echo ok", "web.echo ok", "tools.secret refused", "other.echo refused", "tools.hang timeout", "tools.big too_large"} {
			if !strings.Contains(evs, want) {
				t.Errorf("events: no %q in\n%s", want, evs)
			}
		}

		// Another session's code reaches neither the socket nor the helper.
		b := d.session(t, &api.CreateSessionRequest{})
		e = d.py(t, b, `import os, glob
print(os.path.exists("/run/sandboxd-mcp"), glob.glob("/run/**/gateway.sock", recursive=True), "sandboxd-mcp" in open("/proc/self/mountinfo").read())
try:
    import sandboxd_mcp
    print("imported")
except ImportError:
    print("no helper")`)
		if got := e.Stdout; got != "False [] False\nno helper\n" {
			t.Errorf("a session without MCP servers sees: %q %s", got, e.Stderr)
		}
		// One granted the same server has its own socket and process.
		c := d.session(t, &api.CreateSessionRequest{MCPServers: []string{"tools"}})
		pidOf := func(id string) int {
			t.Helper()
			e := d.py(t, id, `from sandboxd_mcp import call; print(call("tools", "pid")["pid"])`)
			var pid int
			if _, err := fmt.Sscan(e.Stdout, &pid); err != nil {
				t.Fatalf("pid in %s: %q %s", id, e.Stdout, e.Stderr)
			}
			return pid
		}
		pa, pc := pidOf(a), pidOf(c)
		if pa == pc {
			t.Errorf("two sessions share the server process %d", pa)
		}
		if evs := gatewayEvents(t, d, ctx, since, c); !strings.Contains(evs, c+" tools.pid ok") || strings.Contains(evs, a) {
			t.Errorf("session %s's events:\n%s", c, evs)
		}

		// An unknown server is refused, in one sentence, and nothing made.
		_, errOut, code = d.ctl(t, "", "create", "--mcp", "nope")
		if code == 0 || !strings.Contains(errOut, `unknown MCP server "nope": this daemon has other, tools, web`) {
			t.Errorf("create --mcp nope: %d %q", code, errOut)
		}

		// A restarted daemon serves the running session's gateway again;
		// the old one's server processes are gone.
		d.terminate()
		testutil.WaitProcessGone(t, pa, 15*time.Second)
		d.launch()
		if e := d.py(t, a, `from sandboxd_mcp import call; print(call("tools", "echo", {"text": "after restart"})["text"])`); strings.TrimSpace(e.Stdout) != "after restart" {
			t.Errorf("after a restart: %q %s", e.Stdout, e.Stderr)
		}
		pa = pidOf(a)
		// Deleting the session ends its server and removes its folder.
		if err := d.c.DeleteSession(ctx, a); err != nil {
			t.Fatal(err)
		}
		testutil.WaitProcessGone(t, pa, 15*time.Second)
		if _, err := os.Stat(filepath.Join(d.stateDir(), "mcp", a)); !os.IsNotExist(err) {
			t.Errorf("the deleted session's gateway folder: %v", err)
		}
	})
}

// gatewayEvents are the MCP events of session id since then, a line
// each: "<session> <server>.<tool> <outcome>".
func gatewayEvents(t *testing.T, d *daemon, ctx context.Context, since time.Time, id string) string {
	t.Helper()
	var lines []string
	f := api.EventFilter{Since: since, Until: time.Now().Add(time.Second), Sessions: []string{id}, Types: []string{api.EventTypeMCP}}
	err := d.c.Events(ctx, f, func(ev *api.SessionEvent) error {
		b, _ := json.Marshal(ev)
		if ev.DurationMS == nil || ev.Action != "" || strings.Contains(string(b), `"action"`) {
			t.Errorf("an MCP event: %s", b)
		}
		lines = append(lines, fmt.Sprintf("%s %s.%s %s", ev.SessionID, ev.Server, ev.Tool, ev.Outcome))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(lines, "\n")
}
