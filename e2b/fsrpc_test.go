package e2b

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/sandboxd/sandboxd/api"
)

// rpcCall sends a unary Connect call with the JSON codec, as connect-web
// does, and returns the status and body.
func (tg *testGateway) rpcCall(s sandbox, procedure, body string) (int, string) {
	tg.t.Helper()
	r := httptest.NewRequest("POST", "/"+procedure, strings.NewReader(body))
	r.Host = tg.listen
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Connect-Protocol-Version", "1")
	r.Header.Set("E2b-Sandbox-Id", s.SandboxID)
	r.Header.Set("E2b-Sandbox-Port", "49983")
	r.Header.Set("X-Access-Token", s.EnvdAccessToken)
	w := httptest.NewRecorder()
	tg.g.ServeHTTP(w, r)
	b, _ := io.ReadAll(w.Result().Body)
	return w.Code, string(b)
}

func TestFilesystemRPCs(t *testing.T) {
	t.Parallel()
	tg := newTestGateway(t)
	s := tg.create(tg.key, `{"templateID":"base"}`)
	tg.d.PutFile(t.Context(), s.SandboxID, "/workspace/a.txt", strings.NewReader("hello"))
	tg.d.PutFileMeta(t.Context(), s.SandboxID, "/workspace/d/b.txt", strings.NewReader("hi"), map[string]string{"author": "ada"})

	code, out := tg.rpcCall(s, "filesystem.Filesystem/Stat", `{"path":"a.txt"}`)
	var st entryResponse
	if err := json.Unmarshal([]byte(out), &st); code != 200 || err != nil || st.Entry.Path != "/home/user/a.txt" || st.Entry.Type != "FILE_TYPE_FILE" || st.Entry.Size != 5 || st.Entry.Mode != 0o644 || st.Entry.Owner != "user" {
		t.Fatalf("Stat: %d %s", code, out)
	}
	if !strings.Contains(out, `"size":"5"`) {
		t.Errorf("Stat: a 64-bit size is a string in protobuf's JSON: %s", out)
	}
	if code, out := tg.rpcCall(s, "filesystem.Filesystem/Stat", `{"path":"missing"}`); code != http.StatusNotFound || !strings.Contains(out, `"code":"not_found"`) {
		t.Errorf("Stat of a missing file: %d %s", code, out)
	}
	code, out = tg.rpcCall(s, "filesystem.Filesystem/ListDir", `{"path":"/home/user","depth":2}`)
	var list listDirResponse
	if err := json.Unmarshal([]byte(out), &list); code != 200 || err != nil || len(list.Entries) != 2 {
		t.Fatalf("ListDir: %d %s", code, out)
	}
	for _, e := range list.Entries {
		if e.Permissions != "-rw-r-----" || !strings.HasPrefix(e.Path, "/home/user/") {
			t.Errorf("ListDir entry %+v", e)
		}
	}
	// Metadata, where a file has some (envd 0.6.2's EntryInfo.metadata).
	for _, e := range list.Entries {
		if (e.Name == "b.txt") != (e.Metadata["author"] == "ada") {
			t.Errorf("ListDir entry's metadata %+v", e)
		}
	}
	if code, out := tg.rpcCall(s, "filesystem.Filesystem/Stat", `{"path":"d/b.txt"}`); code != 200 || !strings.Contains(out, `"metadata":{"author":"ada"}`) {
		t.Errorf("Stat's metadata: %d %s", code, out)
	}
	if code, out := tg.rpcCall(s, "filesystem.Filesystem/Stat", `{"path":"a.txt"}`); code != 200 || strings.Contains(out, `"metadata"`) {
		t.Errorf("Stat without metadata: %d %s", code, out)
	}
	if code, out := tg.rpcCall(s, "filesystem.Filesystem/MakeDir", `{"path":"new"}`); code != 200 || !strings.Contains(out, `"FILE_TYPE_DIRECTORY"`) {
		t.Errorf("MakeDir: %d %s", code, out)
	}
	if code, out := tg.rpcCall(s, "filesystem.Filesystem/MakeDir", `{"path":"new"}`); code != http.StatusConflict || !strings.Contains(out, `"already_exists"`) {
		t.Errorf("MakeDir again: %d %s", code, out)
	}
	if code, out := tg.rpcCall(s, "filesystem.Filesystem/Move", `{"source":"a.txt","destination":"/tmp/a.txt"}`); code != 200 || !strings.Contains(out, `"/tmp/a.txt"`) {
		t.Errorf("Move: %d %s", code, out)
	}
	if code, out := tg.rpcCall(s, "filesystem.Filesystem/Remove", `{"path":"/tmp/a.txt"}`); code != 200 || out != "{}" {
		t.Errorf("Remove: %d %s", code, out)
	}
	for _, c := range []struct {
		procedure, body string
		want            int
	}{
		{"filesystem.Filesystem/Stat", `{"path":`, http.StatusBadRequest},
		{"filesystem.Filesystem/Stat", `{"path":""}`, http.StatusBadRequest},
		{"filesystem.Filesystem/Nothing", `{}`, http.StatusNotImplemented},
		{"process.Process/StreamInput", `{}`, http.StatusNotImplemented},
	} {
		if code, out := tg.rpcCall(s, c.procedure, c.body); code != c.want {
			t.Errorf("%s %s: %d %s, want %d", c.procedure, c.body, code, out, c.want)
		}
	}
}

// envelope is one Connect streaming message.
func envelope(flags byte, msg string) []byte {
	b := make([]byte, 5, 5+len(msg))
	b[0] = flags
	binary.BigEndian.PutUint32(b[1:], uint32(len(msg)))
	return append(b, msg...)
}

func TestWatchDir(t *testing.T) {
	t.Parallel()
	tg := newTestGateway(t)
	s := tg.create(tg.key, `{"templateID":"base"}`)
	tg.d.events = []api.FileEvent{{Type: api.FileCreate, Path: "/workspace/d/x"}, {Type: api.FileOverflow}, {Type: api.FileWrite, Path: "/workspace/d/x"}}
	srv := gatewayServer(t, tg)
	next := streamCall(t, srv, s, "filesystem.Filesystem/WatchDir", `{"path":"/home/user/d","recursive":true}`)
	got := []string{next(), next(), next()}
	want := []string{`{"start":{}}`, `{"filesystem":{"name":"x","type":"EVENT_TYPE_CREATE"}}`, `{"filesystem":{"name":"x","type":"EVENT_TYPE_WRITE"}}`}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("watch sent\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestBadFrames: what no SDK sends answers a Connect error, and the
// gateway goes on serving.
func TestBadFrames(t *testing.T) {
	t.Parallel()
	tg := newTestGateway(t)
	s := tg.create(tg.key, `{"templateID":"base"}`)
	send := func(ctype string, body []byte) int {
		t.Helper()
		r := httptest.NewRequest("POST", "/filesystem.Filesystem/WatchDir", bytes.NewReader(body))
		r.Host = tg.listen
		r.Header.Set("Content-Type", ctype)
		r.Header.Set("E2b-Sandbox-Id", s.SandboxID)
		r.Header.Set("E2b-Sandbox-Port", "49983")
		r.Header.Set("X-Access-Token", s.EnvdAccessToken)
		w := httptest.NewRecorder()
		tg.g.ServeHTTP(w, r)
		return w.Code
	}
	huge := envelope(0, `{"path":"`+strings.Repeat("x", maxBody+1)+`"}`)
	short := envelope(0, `{"path":"d"}`)
	short = short[:len(short)-3]
	lying := envelope(0, `{"path":"d"}`)
	lying[1], lying[2] = 0x7f, 0xff // says 2 GiB
	for name, c := range map[string]struct {
		ctype string
		body  []byte
	}{
		"a message over the bound": {"application/connect+json", huge},
		"a cut envelope":           {"application/connect+json", short},
		"a length that lies":       {"application/connect+json", lying},
		"not JSON":                 {"application/connect+json", envelope(0, "{{{")},
		"a codec not served":       {"application/connect+proto", envelope(0, "x")},
		"no envelope at all":       {"application/connect+json", []byte(`{"path":"d"}`)},
	} {
		// A streaming call that fails answers 200 with the error in its
		// end message, or an HTTP error before it starts: never a watch.
		code := send(c.ctype, c.body)
		if code == http.StatusOK {
			continue // the error is in the stream's end message
		}
		if code < 400 || code >= 500 && code != http.StatusNotImplemented {
			t.Errorf("%s: %d", name, code)
		}
	}
	if code, out := tg.rpcCall(s, "filesystem.Filesystem/Stat", `{"path":"`+strings.Repeat("y", maxBody+1)+`"}`); code < 400 || code >= 500 {
		t.Errorf("a unary message over the bound: %d %.200s", code, out)
	}
	// Still serving.
	tg.d.PutFile(t.Context(), s.SandboxID, "/workspace/ok", strings.NewReader("ok"))
	if code, _ := tg.rpcCall(s, "filesystem.Filesystem/Stat", `{"path":"ok"}`); code != http.StatusOK {
		t.Errorf("after bad frames: %d", code)
	}
}
