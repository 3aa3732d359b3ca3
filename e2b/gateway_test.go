package e2b

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/e2b/keys"
)

// testGateway is a gateway over a fake daemon, with two keys.
type testGateway struct {
	t      *testing.T
	g      *Gateway
	d      *fakeDaemon
	now    time.Time
	key    string
	other  string
	listen string
}

func newTestGateway(t *testing.T) *testGateway {
	t.Helper()
	dir := t.TempDir()
	ks, err := keys.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	id, err := LoadIdentity(dir)
	if err != nil {
		t.Fatal(err)
	}
	tg := &testGateway{t: t, now: time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC), listen: "127.0.0.1:3000"}
	tg.d = newFakeDaemon(func() time.Time { return tg.now })
	if tg.key, _, err = ks.Create("a"); err != nil {
		t.Fatal(err)
	}
	if tg.other, _, err = ks.Create("b"); err != nil {
		t.Fatal(err)
	}
	tg.g, err = New(Options{Daemon: tg.d, Keys: ks, ID: id, Listen: tg.listen,
		Templates: map[string]string{"base": "", "code-interpreter-v1": ""}, Now: func() time.Time { return tg.now }})
	if err != nil {
		t.Fatal(err)
	}
	return tg
}

// do sends a request with key (none when "") and returns the answer's
// status, body and headers.
func (tg *testGateway) do(method, path, key, body string, hdr ...string) (int, string, http.Header) {
	tg.t.Helper()
	r := httptest.NewRequest(method, path, strings.NewReader(body))
	r.Host = tg.listen
	if key != "" {
		r.Header.Set("X-API-KEY", key)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		if hdr[i] == "Host" {
			r.Host = hdr[i+1]
			continue
		}
		r.Header.Set(hdr[i], hdr[i+1])
	}
	w := httptest.NewRecorder()
	tg.g.ServeHTTP(w, r)
	b, _ := io.ReadAll(w.Result().Body)
	return w.Code, string(b), w.Result().Header
}

// create makes a sandbox with key and body, and returns it.
func (tg *testGateway) create(key, body string) sandbox {
	tg.t.Helper()
	code, out, _ := tg.do("POST", "/v2/sandboxes", key, body)
	if code != http.StatusCreated {
		tg.t.Fatalf("create: %d %s", code, out)
	}
	var s sandbox
	if err := json.Unmarshal([]byte(out), &s); err != nil {
		tg.t.Fatal(err)
	}
	return s
}

func TestGuardAndKeys(t *testing.T) {
	t.Parallel()
	tg := newTestGateway(t)
	for _, c := range []struct {
		name string
		key  string
		hdr  []string
		want int
	}{
		{"no key", "", nil, http.StatusUnauthorized},
		{"wrong key", "e2b_" + strings.Repeat("ab", 20), nil, http.StatusUnauthorized},
		{"not a key", "hello", nil, http.StatusUnauthorized},
		{"good", tg.key, nil, http.StatusOK},
		{"localhost", tg.key, []string{"Host", "localhost:3000"}, http.StatusOK},
		{"an IP literal", tg.key, []string{"Host", "[::1]:3000"}, http.StatusOK},
		{"a web page", tg.key, []string{"Origin", "http://evil.example"}, http.StatusForbidden},
		{"a rebound name", tg.key, []string{"Host", "evil.example:3000"}, http.StatusForbidden},
		{"another port", tg.key, []string{"Host", "127.0.0.1:80"}, http.StatusForbidden},
	} {
		code, body, _ := tg.do("GET", "/v2/sandboxes", c.key, "", c.hdr...)
		if code != c.want {
			t.Errorf("%s: %d %s, want %d", c.name, code, body, c.want)
			continue
		}
		if code >= 400 {
			var e apiError
			if err := json.Unmarshal([]byte(body), &e); err != nil || e.Code != code || e.Message == "" {
				t.Errorf("%s: body %s is not E2B's error", c.name, body)
			}
		}
	}
}

func TestCreate(t *testing.T) {
	t.Parallel()
	tg := newTestGateway(t)
	s := tg.create(tg.key, `{"templateID":"base","timeout":300,"metadata":{"user":"ann","a b":"c&d"},"envVars":{"X":"1"}}`)
	if s.SandboxID == "" || s.TemplateID != "base" || s.EnvdVersion != EnvdVersion || s.EnvdAccessToken != tg.g.o.ID.accessToken(s.SandboxID) {
		t.Fatalf("created %+v", s)
	}
	req := tg.d.created[0]
	if req.Template != "" || req.Env["X"] != "1" || *req.DeadlineS != 300 || *req.IdleTimeoutS != 0 || req.Network != "none" {
		t.Fatalf("session asked %+v", req)
	}
	if req.Labels[labelMeta+"a b"] != "c&d" || req.Labels[labelTemplate] != "base" {
		t.Fatalf("labels %v", req.Labels)
	}
	// Another template id names a sandboxd template; the network is asked.
	tg.create(tg.key, `{"templateID":"python","allow_internet_access":true}`)
	if req := tg.d.created[1]; req.Template != "python" || req.Network != "open" || *req.DeadlineS != defaultTimeoutS {
		t.Fatalf("second session asked %+v", req)
	}
	for _, c := range []struct {
		body string
		want int
	}{
		{`{}`, http.StatusBadRequest},
		{`{"templateID":`, http.StatusBadRequest},
		{`{"templateID":"base","timeout":-1}`, http.StatusBadRequest},
		{`{"templateID":"base","metadata":{"a=b":"c"}}`, http.StatusBadRequest},
		{`{"templateID":"missing"}`, http.StatusNotFound},
		{`{"templateID":"base","mcp":{"x":{}}}`, http.StatusNotImplemented},
		{`{"templateID":"base","autoPause":true}`, http.StatusNotImplemented},
		{`{"templateID":"` + strings.Repeat("x", maxBody) + `"}`, http.StatusRequestEntityTooLarge},
	} {
		if code, body, _ := tg.do("POST", "/sandboxes", tg.key, c.body); code != c.want {
			t.Errorf("create %.60s: %d %s, want %d", c.body, code, body, c.want)
		}
	}
}

func TestAnotherKeysSandbox(t *testing.T) {
	t.Parallel()
	tg := newTestGateway(t)
	s := tg.create(tg.key, `{"templateID":"base"}`)
	for _, c := range []struct{ method, path, body string }{
		{"GET", "/sandboxes/" + s.SandboxID, ""},
		{"DELETE", "/sandboxes/" + s.SandboxID, ""},
		{"POST", "/sandboxes/" + s.SandboxID + "/timeout", `{"timeout":10}`},
		{"POST", "/sandboxes/" + s.SandboxID + "/pause", ""},
		{"POST", "/v2/sandboxes/" + s.SandboxID + "/connect", `{"timeout":10}`},
		{"GET", "/sandboxes/" + s.SandboxID + "/metrics", ""},
	} {
		if code, body, _ := tg.do(c.method, c.path, tg.other, c.body); code != http.StatusNotFound {
			t.Errorf("%s %s with another key: %d %s", c.method, c.path, code, body)
		}
	}
	if _, body, _ := tg.do("GET", "/v2/sandboxes", tg.other, ""); body != "[]\n" {
		t.Errorf("another key lists %s", body)
	}
	if len(tg.d.sessions) != 1 {
		t.Fatal("another key's calls changed something")
	}
}

func TestListPagesAndFilters(t *testing.T) {
	t.Parallel()
	tg := newTestGateway(t)
	a := tg.create(tg.key, `{"templateID":"base","metadata":{"team":"x"}}`)
	b := tg.create(tg.key, `{"templateID":"base","metadata":{"team":"y"}}`)
	c := tg.create(tg.key, `{"templateID":"python","metadata":{"team":"x"}}`)
	if code, _, _ := tg.do("POST", "/sandboxes/"+b.SandboxID+"/pause", tg.key, ""); code != http.StatusNoContent {
		t.Fatalf("pause: %d", code)
	}
	ids := func(body string) (out []string) {
		var l []listedSandbox
		if err := json.Unmarshal([]byte(body), &l); err != nil {
			t.Fatalf("%v: %s", err, body)
		}
		for _, s := range l {
			out = append(out, s.SandboxID)
		}
		return out
	}
	for _, q := range []struct {
		query string
		want  []string
	}{
		{"", []string{c.SandboxID, b.SandboxID, a.SandboxID}},
		{"?order=asc", []string{a.SandboxID, b.SandboxID, c.SandboxID}},
		{"?state=paused", []string{b.SandboxID}},
		{"?state=running", []string{c.SandboxID, a.SandboxID}},
		{"?state=running&state=paused&template=python", []string{c.SandboxID}},
		{"?metadata=team%3Dx", []string{c.SandboxID, a.SandboxID}},
	} {
		code, body, _ := tg.do("GET", "/v2/sandboxes"+q.query, tg.key, "")
		if got := ids(body); code != http.StatusOK || strings.Join(got, ",") != strings.Join(q.want, ",") {
			t.Errorf("list %s: %d %v, want %v", q.query, code, got, q.want)
		}
	}
	// Two pages of two.
	_, body, h := tg.do("GET", "/v2/sandboxes?limit=2", tg.key, "")
	next := h.Get("x-next-token")
	if got := ids(body); len(got) != 2 || next == "" {
		t.Fatalf("first page %v, next %q", got, next)
	}
	_, body, h = tg.do("GET", "/v2/sandboxes?limit=2&nextToken="+next, tg.key, "")
	if got := ids(body); len(got) != 1 || got[0] != a.SandboxID || h.Get("x-next-token") != "" {
		t.Fatalf("second page %v, next %q", got, h.Get("x-next-token"))
	}
	// v1 lists the running ones.
	_, body, _ = tg.do("GET", "/sandboxes", tg.key, "")
	if got := ids(body); len(got) != 2 {
		t.Fatalf("v1 list %v", got)
	}
	for _, bad := range []string{"?state=gone", "?limit=x", "?order=up", "?nextToken=!!", "?startedAfter=yesterday"} {
		if code, body, _ := tg.do("GET", "/v2/sandboxes"+bad, tg.key, ""); code != http.StatusBadRequest {
			t.Errorf("list %s: %d %s", bad, code, body)
		}
	}
}

func TestTimeoutsPauseConnect(t *testing.T) {
	t.Parallel()
	tg := newTestGateway(t)
	s := tg.create(tg.key, `{"templateID":"base","timeout":60}`)
	path := "/sandboxes/" + s.SandboxID
	deadline := func() time.Time {
		d := tg.d.sessions[s.SandboxID].Deadline
		if d == nil {
			return time.Time{}
		}
		return *d
	}
	if code, _, _ := tg.do("POST", path+"/timeout", tg.key, `{"timeout":10}`); code != http.StatusNoContent || !deadline().Equal(tg.now.Add(10*time.Second)) {
		t.Fatalf("timeout 10: %d, deadline %v", code, deadline())
	}
	if code, _, _ := tg.do("POST", path+"/timeout", tg.key, `{"timeout":0}`); code != http.StatusBadRequest {
		t.Fatalf("timeout 0: %d", code)
	}
	// Connect never shortens, but extends.
	if code, _, _ := tg.do("POST", "/v2"+path+"/connect", tg.key, `{"timeout":5}`); code != http.StatusOK || !deadline().Equal(tg.now.Add(10*time.Second)) {
		t.Fatalf("connect 5: %d, deadline %v", code, deadline())
	}
	if code, _, _ := tg.do("POST", path+"/connect", tg.key, `{"timeout":100}`); code != http.StatusOK || !deadline().Equal(tg.now.Add(100*time.Second)) {
		t.Fatalf("connect 100: %d, deadline %v", code, deadline())
	}
	// Paused: no deadline; connect resumes it with one.
	if code, _, _ := tg.do("POST", path+"/pause", tg.key, ""); code != http.StatusNoContent || !deadline().IsZero() {
		t.Fatalf("pause: %d, deadline %v", code, deadline())
	}
	if code, _, _ := tg.do("POST", path+"/pause", tg.key, ""); code != http.StatusConflict {
		t.Fatalf("pause again: %d", code)
	}
	_, body, _ := tg.do("GET", path, tg.key, "")
	var d sandboxDetail
	if err := json.Unmarshal([]byte(body), &d); err != nil || d.State != "paused" || d.Lifecycle.OnTimeout != "kill" {
		t.Fatalf("detail of a paused sandbox: %s", body)
	}
	if code, _, _ := tg.do("POST", "/v2"+path+"/connect", tg.key, `{"timeout":30}`); code != http.StatusCreated || !deadline().Equal(tg.now.Add(30*time.Second)) {
		t.Fatalf("connect to a paused one: %d, deadline %v", code, deadline())
	}
	if code, _, _ := tg.do("POST", path+"/resume", tg.key, `{}`); code != http.StatusConflict {
		t.Fatalf("resume a running one: %d", code)
	}
	if code, _, _ := tg.do("POST", path+"/refreshes", tg.key, `{"duration":3601}`); code != http.StatusBadRequest {
		t.Fatalf("refresh too long: %d", code)
	}
	if code, body, _ := tg.do("GET", path+"/metrics", tg.key, ""); code != http.StatusOK || !strings.Contains(body, `"cpuUsedPct":50`) {
		t.Fatalf("metrics: %d %s", code, body)
	}
}

// TestHibernatedIsPaused: a sandbox sandboxd hibernated (idle_action
// "hibernate") is one E2B calls paused: listed, never discarded, and a
// connect wakes it.
func TestHibernatedIsPaused(t *testing.T) {
	t.Parallel()
	tg := newTestGateway(t)
	s := tg.create(tg.key, `{"templateID":"base"}`)
	tg.d.hibernate(s.SandboxID)
	if code, body, _ := tg.do("GET", "/v2/sandboxes?state=paused", tg.key, ""); code != http.StatusOK || !strings.Contains(body, s.SandboxID) {
		t.Fatalf("list paused: %d %s", code, body)
	}
	_, body, _ := tg.do("GET", "/sandboxes/"+s.SandboxID, tg.key, "")
	var d sandboxDetail
	if err := json.Unmarshal([]byte(body), &d); err != nil || d.State != "paused" {
		t.Fatalf("detail of a hibernated sandbox: %s", body)
	}
	if code, _, _ := tg.do("POST", "/sandboxes/"+s.SandboxID+"/connect", tg.key, `{"timeout":30}`); code != http.StatusCreated {
		t.Fatalf("connect to a hibernated one: %d", code)
	}
	if st := tg.d.sessions[s.SandboxID].Status; st != api.StatusRunning {
		t.Fatalf("after the connect: %s", st)
	}
}

func TestEndedAndKilled(t *testing.T) {
	t.Parallel()
	tg := newTestGateway(t)
	s := tg.create(tg.key, `{"templateID":"base"}`)
	tg.d.end(s.SandboxID) // its deadline stopped it
	if code, _, _ := tg.do("GET", "/sandboxes/"+s.SandboxID, tg.key, ""); code != http.StatusNotFound {
		t.Fatalf("an ended sandbox: %d", code)
	}
	if len(tg.d.deleted) != 1 {
		t.Fatal("an ended sandbox was not deleted")
	}
	s = tg.create(tg.key, `{"templateID":"base"}`)
	if code, _, _ := tg.do("DELETE", "/sandboxes/"+s.SandboxID, tg.key, ""); code != http.StatusNoContent {
		t.Fatalf("kill: %d", code)
	}
	if code, _, _ := tg.do("DELETE", "/sandboxes/"+s.SandboxID, tg.key, ""); code != http.StatusNotFound {
		t.Fatalf("kill again: %d", code)
	}
}

func TestPathsAndMethods(t *testing.T) {
	t.Parallel()
	tg := newTestGateway(t)
	for _, c := range []struct {
		method, path string
		hdr          []string
		want         int
	}{
		{"PATCH", "/sandboxes", nil, http.StatusMethodNotAllowed},
		{"GET", "/sandboxes/x/y/z", nil, http.StatusNotFound},
		{"POST", "/sandboxes/x/fork", nil, http.StatusNotImplemented},
		{"GET", "/volumes", nil, http.StatusNotImplemented},
		{"GET", "/nothing", nil, http.StatusNotFound},
	} {
		if code, body, _ := tg.do(c.method, c.path, tg.key, "", c.hdr...); code != c.want {
			t.Errorf("%s %s: %d %s, want %d", c.method, c.path, code, body, c.want)
		}
	}
	_ = api.StatusRunning
}

func TestSweep(t *testing.T) {
	t.Parallel()
	tg := newTestGateway(t)
	ended := tg.create(tg.key, `{"templateID":"base"}`)
	live := tg.create(tg.other, `{"templateID":"base"}`)
	theirs, _ := tg.d.CreateSession(t.Context(), &api.CreateSessionRequest{Labels: map[string]string{labelGateway: "another"}})
	tg.d.end(ended.SandboxID)
	tg.d.end(theirs.ID)
	tg.g.sweep(t.Context())
	if _, ok := tg.d.sessions[ended.SandboxID]; ok {
		t.Error("an ended sandbox was not swept")
	}
	if _, ok := tg.d.sessions[live.SandboxID]; !ok {
		t.Error("a running sandbox was swept")
	}
	if _, ok := tg.d.sessions[theirs.ID]; !ok {
		t.Error("another gateway's session was swept")
	}
}
