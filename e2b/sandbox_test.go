package e2b

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/sandboxd/sandboxd/api"
)

// sandboxReq sends a request to sandbox id's port as the SDKs do.
func (tg *testGateway) sandboxReq(method, path, id string, port int, token, body string) (int, string) {
	tg.t.Helper()
	hdr := []string{"E2b-Sandbox-Id", id, "E2b-Sandbox-Port", strconv.Itoa(port)}
	if token != "" {
		hdr = append(hdr, "X-Access-Token", token)
	}
	code, out, _ := tg.do(method, path, "", body, hdr...)
	return code, out
}

func TestSandboxRequests(t *testing.T) {
	t.Parallel()
	tg := newTestGateway(t)
	s := tg.create(tg.key, `{"templateID":"base"}`)
	tok := s.EnvdAccessToken
	for _, c := range []struct {
		name, method, path string
		port               int
		token              string
		want               int
	}{
		{"health", "GET", "/health", portEnvd, tok, http.StatusNoContent},
		{"health without a token", "GET", "/health", portEnvd, "", http.StatusNoContent},
		{"interpreter health", "GET", "/health", portInterpreter, tok, http.StatusNoContent},
		{"no token", "GET", "/contexts", portInterpreter, "", http.StatusUnauthorized},
		{"another sandbox's token", "GET", "/contexts", portInterpreter, tg.g.o.ID.accessToken("other"), http.StatusUnauthorized},
		{"another port", "GET", "/health", 8080, tok, http.StatusBadGateway},
		{"not served", "POST", "/process.Process/StreamInput", portEnvd, tok, http.StatusNotImplemented},
		{"contexts", "GET", "/contexts", portInterpreter, tok, http.StatusOK},
	} {
		if code, body := tg.sandboxReq(c.method, c.path, s.SandboxID, c.port, c.token, ""); code != c.want {
			t.Errorf("%s: %d %s, want %d", c.name, code, body, c.want)
		}
	}
	// The traffic token (the code interpreter SDK's contexts calls send
	// it alone) opens the interpreter's port, not envd's.
	if s.TrafficAccessToken == nil || *s.TrafficAccessToken == "" || *s.TrafficAccessToken == tok {
		t.Fatalf("create answered traffic token %v", s.TrafficAccessToken)
	}
	for port, want := range map[int]int{portInterpreter: http.StatusOK, portEnvd: http.StatusUnauthorized} {
		code, out, _ := tg.do("GET", "/contexts", "", "", "E2b-Sandbox-Id", s.SandboxID, "E2b-Sandbox-Port", strconv.Itoa(port),
			"E2B-Traffic-Access-Token", *s.TrafficAccessToken)
		if code != want {
			t.Errorf("traffic token on port %d: %d %s, want %d", port, code, out, want)
		}
	}
	// A sandbox that is paused, gone or not the gateway's is a 502: the
	// SDKs report it killed.
	tg.do("POST", "/sandboxes/"+s.SandboxID+"/pause", tg.key, "")
	if code, _ := tg.sandboxReq("GET", "/health", s.SandboxID, portEnvd, tok, ""); code != http.StatusBadGateway {
		t.Errorf("a paused sandbox's health: %d", code)
	}
	tg.do("DELETE", "/sandboxes/"+s.SandboxID, tg.key, "")
	if code, _ := tg.sandboxReq("GET", "/health", s.SandboxID, portEnvd, tok, ""); code != http.StatusBadGateway {
		t.Errorf("a killed sandbox's health: %d", code)
	}
	theirs, _ := tg.d.CreateSession(t.Context(), &api.CreateSessionRequest{Labels: map[string]string{labelGateway: "another"}})
	if code, _ := tg.sandboxReq("GET", "/health", theirs.ID, portEnvd, tg.g.o.ID.accessToken(theirs.ID), ""); code != http.StatusBadGateway {
		t.Errorf("another gateway's sandbox: %d", code)
	}
}

// lines are an NDJSON answer's lines.
func lines(t *testing.T, body string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(body), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
		out = append(out, m)
	}
	return out
}

func TestExecute(t *testing.T) {
	t.Parallel()
	tg := newTestGateway(t)
	s := tg.create(tg.key, `{"templateID":"base","timeout":100}`)
	run := func(body string) []map[string]any {
		t.Helper()
		code, out := tg.sandboxReq("POST", "/execute", s.SandboxID, portInterpreter, s.EnvdAccessToken, body)
		if code != http.StatusOK {
			t.Fatalf("execute %s: %d %s", body, code, out)
		}
		ls := lines(t, out)
		if ls[len(ls)-1]["type"] != "end_of_execution" {
			t.Fatalf("execute %s: no end_of_execution: %s", body, out)
		}
		return ls[:len(ls)-1]
	}
	if ls := run(`{"code":"print"}`); len(ls) != 1 || ls[0]["type"] != "stdout" || ls[0]["text"] != "hello\n" {
		t.Errorf("print: %v", ls)
	}
	if ls := run(`{"code":"boom"}`); len(ls) != 1 || ls[0]["type"] != "error" || ls[0]["name"] != "ValueError" || ls[0]["traceback"] != "Traceback …" {
		t.Errorf("boom: %v", ls)
	}
	if ls := run(`{"code":"figure"}`); len(ls) != 2 || ls[0]["html"] != "<b>hi</b>" || ls[0]["is_main_result"] != false || ls[1]["png"] != "iVBORw0K" {
		t.Errorf("figure: %v", ls)
	}
	if ls := run(`{"code":"42"}`); len(ls) != 1 || ls[0]["text"] != "42" || ls[0]["html"] != "<i>42</i>" || ls[0]["is_main_result"] != true {
		t.Errorf("a result: %v", ls)
	}
	if ls := run(`{"code":"exit","language":"bash","env_vars":{"A":"b"}}`); len(ls) != 1 || ls[0]["name"] != "CommandExitError" {
		t.Errorf("bash exit 3: %v", ls)
	}
	last := tg.d.execs[len(tg.d.execs)-1]
	if last.Language != api.LanguageShell || last.Env["A"] != "b" || *last.TimeoutS > 101 || *last.TimeoutS < 99 {
		t.Errorf("the daemon was asked %+v (timeout %v)", last, *last.TimeoutS)
	}
	for _, c := range []struct {
		body string
		want int
	}{
		{`{"code":"1","language":"r"}`, http.StatusNotImplemented},
		{`{"code":"1","context_id":"mine"}`, http.StatusNotFound},
		{`{"code":`, http.StatusBadRequest},
	} {
		if code, out := tg.sandboxReq("POST", "/execute", s.SandboxID, portInterpreter, s.EnvdAccessToken, c.body); code != c.want {
			t.Errorf("execute %s: %d %s, want %d", c.body, code, out, c.want)
		}
	}
}
