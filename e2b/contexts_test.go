package e2b

import (
	"encoding/json"
	"net/http"
	"slices"
	"testing"

	"github.com/sandboxd/sandboxd/api"
)

// TestContexts: createCodeContext makes a sandboxd context (python: an
// interpreter; bash: a shell context), its cwd mapped both ways; the list
// has the two defaults first; runCode in a context names it to the
// daemon, with its language; restart and remove reach the daemon; the
// defaults cannot be removed; an unknown context or language is refused.
func TestContexts(t *testing.T) {
	t.Parallel()
	tg := newTestGateway(t)
	s := tg.create(tg.key, `{"templateID":"base","timeout":100}`)
	req := func(method, path, body string) (int, string) {
		t.Helper()
		return tg.sandboxReq(method, path, s.SandboxID, portInterpreter, s.EnvdAccessToken, body)
	}
	made := func(body string) codeContext {
		t.Helper()
		code, out := req("POST", "/contexts", body)
		if code != http.StatusOK {
			t.Fatalf("create %s: %d %s", body, code, out)
		}
		var c codeContext
		if err := json.Unmarshal([]byte(out), &c); err != nil {
			t.Fatal(err)
		}
		return c
	}
	py := made(`{"cwd":"/home/user/data"}`)
	if py.Language != "python" || py.Cwd != "/home/user/data" || py.ID == "" {
		t.Errorf("python context: %+v", py)
	}
	sh := made(`{"language":"bash","cwd":"/tmp"}`)
	if sh.Language != "bash" || sh.Cwd != "/tmp" {
		t.Errorf("bash context: %+v", sh)
	}
	if cs := tg.d.contexts[s.SandboxID]; len(cs) != 2 || cs[0].Cwd != "/workspace/data" || cs[1].Language != api.LanguageShell {
		t.Errorf("the daemon's contexts: %+v", cs)
	}
	code, out := req("GET", "/contexts", "")
	var list []codeContext
	_ = json.Unmarshal([]byte(out), &list)
	if code != http.StatusOK || len(list) != 4 || list[0].ID != "python" || list[1].ID != "bash" || list[2] != py || list[3] != sh {
		t.Errorf("list: %d %s", code, out)
	}

	tg.d.execs = nil
	for _, cid := range []string{py.ID, sh.ID, "bash", "python"} {
		if code, out := req("POST", "/execute", `{"code":"1","context_id":"`+cid+`"}`); code != http.StatusOK {
			t.Fatalf("execute in %s: %d %s", cid, code, out)
		}
	}
	want := []api.ExecRequest{{Language: api.LanguagePython, Context: py.ID}, {Language: api.LanguageShell, Context: sh.ID},
		{Language: api.LanguageShell}, {Language: api.LanguagePython}}
	for i, e := range tg.d.execs {
		if e.Language != want[i].Language || e.Context != want[i].Context {
			t.Errorf("execution %d: %s in %q, want %s in %q", i, e.Language, e.Context, want[i].Language, want[i].Context)
		}
	}

	for _, c := range []struct {
		name, method, path, body string
		want                     int
	}{
		{"unknown context", "POST", "/execute", `{"code":"1","context_id":"nope"}`, http.StatusNotFound},
		{"typescript", "POST", "/contexts", `{"language":"typescript"}`, http.StatusNotImplemented},
		{"remove python", "DELETE", "/contexts/python", "", http.StatusBadRequest},
		{"remove bash", "DELETE", "/contexts/bash", "", http.StatusBadRequest},
		{"remove unknown", "DELETE", "/contexts/nope", "", http.StatusNotFound},
		{"restart python", "POST", "/contexts/python/restart", "", http.StatusNoContent},
		{"restart bash", "POST", "/contexts/bash/restart", "", http.StatusNoContent},
		{"restart own", "POST", "/contexts/" + py.ID + "/restart", "", http.StatusNoContent},
		{"remove own", "DELETE", "/contexts/" + py.ID, "", http.StatusNoContent},
		{"nested path", "DELETE", "/contexts/a/b", "", http.StatusNotImplemented},
	} {
		if code, out := req(c.method, c.path, c.body); code != c.want {
			t.Errorf("%s: %d %s, want %d", c.name, code, out, c.want)
		}
	}
	if !slices.Equal(tg.d.restarted, []string{api.ContextDefault, py.ID}) {
		t.Errorf("restarted %v", tg.d.restarted)
	}
	if cs := tg.d.contexts[s.SandboxID]; len(cs) != 1 || cs[0].ID != sh.ID {
		t.Errorf("after the remove: %+v", cs)
	}
}

// TestJavaScriptCode: runCode in JavaScript (language js or javascript, or
// a javascript context) reaches the daemon as javascript.
func TestJavaScriptCode(t *testing.T) {
	t.Parallel()
	tg := newTestGateway(t)
	s := tg.create(tg.key, `{"templateID":"base","timeout":100}`)
	req := func(method, path, body string) (int, string) {
		t.Helper()
		return tg.sandboxReq(method, path, s.SandboxID, portInterpreter, s.EnvdAccessToken, body)
	}
	code, out := req("POST", "/contexts", `{"language":"javascript"}`)
	var c codeContext
	if err := json.Unmarshal([]byte(out), &c); code != http.StatusOK || err != nil || c.Language != "javascript" {
		t.Fatalf("create: %d %s", code, out)
	}
	tg.d.execs = nil
	for _, body := range []string{`{"code":"1","language":"js"}`, `{"code":"1","language":"javascript"}`, `{"code":"1","context_id":"` + c.ID + `"}`} {
		if code, out := req("POST", "/execute", body); code != http.StatusOK {
			t.Fatalf("%s: %d %s", body, code, out)
		}
	}
	for i, e := range tg.d.execs {
		if e.Language != api.LanguageJavaScript || (i == 2) != (e.Context == c.ID) {
			t.Errorf("execution %d: %s in %q", i, e.Language, e.Context)
		}
	}
}
