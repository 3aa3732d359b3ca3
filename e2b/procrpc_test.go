package e2b

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// streamCall starts a server-streaming Connect call on srv and returns
// a reader of its messages.
func streamCall(t *testing.T, srv *httptest.Server, s sandbox, procedure, body string, hdr ...string) func() string {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), "POST", srv.URL+"/"+procedure, bytes.NewReader(envelope(0, body)))
	req.Header.Set("Content-Type", "application/connect+json")
	req.Header.Set("Connect-Protocol-Version", "1")
	req.Header.Set("E2b-Sandbox-Id", s.SandboxID)
	req.Header.Set("E2b-Sandbox-Port", "49983")
	req.Header.Set("X-Access-Token", s.EnvdAccessToken)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	r := bufio.NewReader(resp.Body)
	return func() string {
		t.Helper()
		h := make([]byte, 5)
		if _, err := io.ReadFull(r, h); err != nil {
			t.Fatalf("%s: %v", procedure, err)
		}
		msg := make([]byte, binary.BigEndian.Uint32(h[1:]))
		if _, err := io.ReadFull(r, msg); err != nil {
			t.Fatal(err)
		}
		return string(msg)
	}
}

// gatewayServer serves tg's gateway on a real listener.
func gatewayServer(t *testing.T, tg *testGateway) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(nil)
	t.Cleanup(srv.Close)
	o := tg.g.o
	o.Listen = srv.Listener.Addr().String()
	g, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	srv.Config.Handler = g
	tg.g = g
	tg.listen = o.Listen
	return srv
}

func TestProcessRPCs(t *testing.T) {
	t.Parallel()
	tg := newTestGateway(t)
	s := tg.create(tg.key, `{"templateID":"base"}`)
	srv := gatewayServer(t, tg)

	next := streamCall(t, srv, s, "process.Process/Start",
		`{"process":{"cmd":"/bin/bash","args":["-l","-c","hello"],"envs":{"A":"b"},"cwd":"/home/user/proj"},"stdin":true,"tag":"t1"}`,
		"Connect-Timeout-Ms", "60000")
	if m := next(); m != `{"event":{"start":{"pid":100}}}` {
		t.Fatalf("start: %s", m)
	}
	if m := next(); m != `{"event":{"data":{"stdout":"aGVsbG8="}}}` { // "hello"
		t.Fatalf("stdout: %s", m)
	}
	if m := next(); m != `{"event":{"data":{"stderr":"ZXJy"}}}` { // "err"
		t.Fatalf("stderr: %s", m)
	}
	req := tg.d.started[0]
	if req.Cwd != "/workspace/proj" || !req.Stdin || req.Tag != "t1" || req.TimeoutS < 59 || req.TimeoutS > 60 || req.Env["A"] != "b" {
		t.Fatalf("the daemon was asked %+v", req)
	}
	// Listed while it runs, by envd's names.
	code, out := tg.rpcCall(s, "process.Process/List", `{}`)
	var list listResponse
	if err := json.Unmarshal([]byte(out), &list); code != 200 || err != nil || len(list.Processes) != 1 || list.Processes[0].Config.Cmd != "/bin/bash" || *list.Processes[0].Config.Cwd != "/home/user/proj" || *list.Processes[0].Tag != "t1" {
		t.Fatalf("List: %d %s", code, out)
	}
	// Another follower, from now, by tag.
	later := streamCall(t, srv, s, "process.Process/Connect", `{"process":{"tag":"t1"}}`)
	if m := later(); m != `{"event":{"start":{"pid":100}}}` {
		t.Fatalf("connect: %s", m)
	}
	if code, out := tg.rpcCall(s, "process.Process/SendInput", `{"process":{"pid":100},"input":{"stdin":"aW4="}}`); code != 200 {
		t.Fatalf("SendInput: %d %s", code, out)
	}
	for _, read := range []func() string{next, later} {
		if m := read(); m != `{"event":{"data":{"stdout":"aW4="}}}` {
			t.Fatalf("input echoed: %s", m)
		}
	}
	if code, out := tg.rpcCall(s, "process.Process/CloseStdin", `{"process":{"pid":100}}`); code != 200 {
		t.Fatalf("CloseStdin: %d %s", code, out)
	}
	if m := next(); m != `{"event":{"end":{"exitCode":0,"exited":true,"status":"exit status 0"}}}` {
		t.Fatalf("end: %s", m)
	}
	if code, _ := tg.rpcCall(s, "process.Process/SendInput", `{"process":{"pid":100},"input":{"stdin":"aW4="}}`); code != http.StatusNotFound {
		t.Fatalf("SendInput to an ended process: %d", code)
	}

	// Without stdin, input closes at once; a signal ends it.
	next = streamCall(t, srv, s, "process.Process/Start", `{"process":{"cmd":"sleep","args":["9"]}}`)
	next()
	if tg.d.started[1].Cwd != "" {
		t.Fatalf("default cwd %q, want none: the template's home (/home/user)", tg.d.started[1].Cwd)
	}
	for m := next(); !strings.Contains(m, `"end"`); m = next() {
	}
	next = streamCall(t, srv, s, "process.Process/Start", `{"process":{"cmd":"top"},"pty":{"size":{"cols":100,"rows":30}},"stdin":true}`)
	next()
	if tty := tg.d.started[2].TTY; tty == nil || tty.Cols != 100 || tty.Rows != 30 {
		t.Fatalf("pty %+v", tty)
	}
	if code, out := tg.rpcCall(s, "process.Process/Update", `{"process":{"pid":102},"pty":{"size":{"cols":120,"rows":40}}}`); code != 200 || tg.d.procs[102].info.TTY.Cols != 120 {
		t.Fatalf("Update: %d %s", code, out)
	}
	if code, out := tg.rpcCall(s, "process.Process/SendSignal", `{"process":{"pid":102},"signal":"SIGNAL_SIGKILL"}`); code != 200 {
		t.Fatalf("SendSignal: %d %s", code, out)
	}
	for m := next(); ; m = next() {
		if strings.Contains(m, `"end"`) {
			if !strings.Contains(m, `"exitCode":137`) {
				t.Fatalf("killed: %s", m)
			}
			break
		}
	}
	for _, c := range []struct{ procedure, body string }{
		{"process.Process/SendSignal", `{"process":{"pid":102},"signal":"SIGNAL_SIGHUP"}`},
		{"process.Process/SendInput", `{"process":{}}`},
		{"process.Process/Connect", `{}`},
	} {
		if code, out := tg.rpcCall(s, c.procedure, c.body); code < 400 || code >= 500 {
			t.Errorf("%s %s: %d %s", c.procedure, c.body, code, out)
		}
	}
}
