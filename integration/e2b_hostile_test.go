package integration

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
)

// e2bMaxBody is the gateway's bound on a request body and on an RPC
// message (e2b.maxBody).
const e2bMaxBody = 1 << 20

// TestE2BHostile sends the real gateway what no SDK sends: malformed
// Connect frames, unknown RPCs, bodies over its bounds, missing or wrong
// keys and tokens, another key's sandbox, a web page's Origin, a rebound
// Host. Each answers an E2B-shaped 4xx (REST: {"code": n, "message": …};
// RPC: a Connect error), and after each the gateway still serves: the
// sandbox and its file are there, the next valid request works, the
// gateway logged no panic and leaves no session behind.
func TestE2BHostile(t *testing.T) {
	t.Parallel()
	e := startE2B(t, "")
	hc := &http.Client{}
	do := func(method, path string, body []byte, hdr ...string) (int, []byte) {
		t.Helper()
		req, err := http.NewRequestWithContext(t.Context(), method, e.url+path, bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i+1 < len(hdr); i += 2 {
			if hdr[i] == "Host" {
				req.Host = hdr[i+1]
				continue
			}
			req.Header.Set(hdr[i], hdr[i+1])
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b
	}

	code, b := do("POST", "/sandboxes", []byte(`{"templateID":"base","timeout":120}`), "X-API-KEY", e.key, "Content-Type", "application/json")
	var sbx struct {
		SandboxID       string `json:"sandboxID"`
		EnvdAccessToken string `json:"envdAccessToken"`
	}
	if err := json.Unmarshal(b, &sbx); code != http.StatusCreated || err != nil || sbx.SandboxID == "" || sbx.EnvdAccessToken == "" {
		t.Fatalf("create: %d %s", code, b)
	}
	envd := func(extra ...string) []string {
		return append([]string{"E2b-Sandbox-Id", sbx.SandboxID, "E2b-Sandbox-Port", "49983", "X-Access-Token", sbx.EnvdAccessToken, "Connect-Protocol-Version", "1"}, extra...)
	}
	unary := func(procedure, body string, hdr ...string) (int, []byte) {
		t.Helper()
		return do("POST", "/"+procedure, []byte(body), append(envd("Content-Type", "application/json"), hdr...)...)
	}
	// The valid request each case is followed by.
	stat := func(after string) {
		t.Helper()
		if code, b := unary("filesystem.Filesystem/Stat", `{"path":"/home/user/kept.txt"}`); code != http.StatusOK || !strings.Contains(string(b), `"size":"4"`) {
			t.Errorf("after %s, Stat of the sandbox's file: %d %s", after, code, b)
		}
	}
	if code, b := unary("filesystem.Filesystem/MakeDir", `{"path":"/home/user/d"}`); code != http.StatusOK {
		t.Fatalf("MakeDir: %d %s", code, b)
	}
	if code, b := do("POST", "/files?path=/home/user/kept.txt", []byte("kept"), envd("Content-Type", "application/octet-stream")...); code != http.StatusOK {
		t.Fatalf("upload: %d %s", code, b)
	}
	stat("the upload")

	// REST: each answers {"code": status, "message": why}.
	huge := append([]byte(`{"templateID":"`), bytes.Repeat([]byte("x"), e2bMaxBody+1024)...)
	_, port, _ := net.SplitHostPort(e.addr)
	for _, c := range []struct {
		name, method, path string
		body               []byte
		hdr                []string
		want               int
	}{
		{"no key", "GET", "/sandboxes", nil, nil, 401},
		{"a wrong key", "GET", "/sandboxes", nil, []string{"X-API-KEY", "e2b_" + strings.Repeat("0", 40)}, 401},
		{"a key that is not one", "POST", "/sandboxes", []byte(`{}`), []string{"X-API-KEY", "'; DROP TABLE keys; --"}, 401},
		{"a body over the bound", "POST", "/sandboxes", huge, []string{"X-API-KEY", e.key, "Content-Type", "application/json"}, 413},
		{"not JSON", "POST", "/sandboxes", []byte(`{"templateID":`), []string{"X-API-KEY", e.key, "Content-Type", "application/json"}, 400},
		{"a missing sandbox", "GET", "/sandboxes/nosuch", nil, []string{"X-API-KEY", e.key}, 404},
		{"another key's sandbox", "GET", "/sandboxes/" + sbx.SandboxID, nil, []string{"X-API-KEY", e.other}, 404},
		{"another key kills", "DELETE", "/sandboxes/" + sbx.SandboxID, nil, []string{"X-API-KEY", e.other}, 404},
		{"another key pauses", "POST", "/sandboxes/" + sbx.SandboxID + "/pause", nil, []string{"X-API-KEY", e.other}, 404},
		{"a web page", "GET", "/sandboxes", nil, []string{"X-API-KEY", e.key, "Origin", "https://evil.example"}, 403},
		{"a rebound name", "GET", "/sandboxes", nil, []string{"X-API-KEY", e.key, "Host", "evil.example:" + port}, 403},
		{"another port", "GET", "/sandboxes", nil, []string{"X-API-KEY", e.key, "Host", "127.0.0.1:1"}, 403},
		{"a web page to a sandbox", "POST", "/filesystem.Filesystem/Stat", []byte(`{"path":"/"}`), envd("Content-Type", "application/json", "Origin", "null"), 403},
		{"a rebound name to a sandbox", "POST", "/filesystem.Filesystem/Stat", []byte(`{"path":"/"}`), envd("Content-Type", "application/json", "Host", "rebind.example"), 403},
		{"no access token", "POST", "/filesystem.Filesystem/Stat", []byte(`{"path":"/"}`), envd("Content-Type", "application/json", "X-Access-Token", ""), 401},
		{"a wrong access token", "POST", "/filesystem.Filesystem/Stat", []byte(`{"path":"/"}`), envd("Content-Type", "application/json", "X-Access-Token", strings.Repeat("a", 64)), 401},
		{"a missing sandbox's token", "GET", "/files?path=/home/user/kept.txt", nil, envd("E2b-Sandbox-Id", "nosuch"), 401},
		{"a service envd has not", "POST", "/secret.Service/Steal", []byte(`{}`), envd("Content-Type", "application/json"), 501},
		{"no access token on files", "GET", "/files?path=/home/user/kept.txt", nil, envd("X-Access-Token", ""), 401},
	} {
		code, b := do(c.method, c.path, c.body, c.hdr...)
		var body struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		}
		if err := json.Unmarshal(b, &body); code != c.want || err != nil || body.Code != c.want || body.Message == "" {
			t.Errorf("%s: %d %.300s, want %d with E2B's {code, message}", c.name, code, b, c.want)
		}
		stat(c.name)
	}
	// Another key's sandbox and a missing one are told apart by nothing.
	_, mine := do("GET", "/sandboxes/"+sbx.SandboxID, nil, "X-API-KEY", e.other)
	_, none := do("GET", "/sandboxes/nosuch", nil, "X-API-KEY", e.other)
	if strings.ReplaceAll(string(mine), sbx.SandboxID, "ID") != strings.ReplaceAll(string(none), "nosuch", "ID") {
		t.Errorf("another key's sandbox answers %s, a missing one %s", mine, none)
	}

	// RPC, unary: a Connect error body, {"code": "…", "message": …}.
	for _, c := range []struct {
		name, procedure, body string
		want                  int
		connect               string
	}{
		{"not JSON", "filesystem.Filesystem/Stat", `{"path":`, 400, "invalid_argument"},
		{"a wrong type", "filesystem.Filesystem/Stat", `{"path":7}`, 400, "invalid_argument"},
		{"an unknown RPC", "filesystem.Filesystem/Format", `{}`, 501, "unimplemented"},
		{"a message over the bound", "filesystem.Filesystem/Stat", `{"path":"` + strings.Repeat("y", e2bMaxBody+1024) + `"}`, 0, "resource_exhausted"},
	} {
		code, b := unary(c.procedure, c.body)
		var ce struct{ Code, Message string }
		if err := json.Unmarshal(b, &ce); err != nil || code < 400 || code >= 600 || (c.want != 0 && code != c.want) || ce.Code != c.connect || ce.Message == "" {
			t.Errorf("unary %s: %d %.300s, want %d and Connect's %q", c.name, code, b, c.want, c.connect)
		}
		stat("unary " + c.name)
	}

	// RPC, streaming (envelopes: a flag byte, a 4-byte length, the
	// message). A stream that fails before it starts answers an HTTP
	// error or 200 with the error in its end message (flag 2); never a
	// message of the call.
	frame := func(msg string) []byte {
		b := make([]byte, 5+len(msg))
		binary.BigEndian.PutUint32(b[1:], uint32(len(msg)))
		copy(b[5:], msg)
		return b
	}
	watch := frame(`{"path":"/home/user/d"}`)
	lying := frame(`{"path":"/home/user/d"}`)
	binary.BigEndian.PutUint32(lying[1:], 0xffffffff)
	longer := frame(`{"path":"/home/user/d"}`)
	binary.BigEndian.PutUint32(longer[1:], uint32(len(longer)+10))
	for _, c := range []struct {
		name, procedure string
		body            []byte
	}{
		{"a cut envelope", "filesystem.Filesystem/WatchDir", watch[:len(watch)-4]},
		{"a cut header", "filesystem.Filesystem/WatchDir", watch[:3]},
		{"a length past the body", "filesystem.Filesystem/WatchDir", longer},
		{"a huge declared length", "filesystem.Filesystem/WatchDir", lying},
		{"not JSON", "filesystem.Filesystem/WatchDir", frame("{{{")},
		{"no envelope", "process.Process/Start", []byte(`{"process":{"cmd":"/bin/true"}}`)},
		{"a compressed flag, no compression", "process.Process/Start", append([]byte{1}, frame(`{"process":{"cmd":"/bin/true"}}`)[1:]...)},
		{"an unknown streaming RPC", "process.Process/Hijack", frame(`{}`)},
	} {
		code, b := do("POST", "/"+c.procedure, c.body, envd("Content-Type", "application/connect+json")...)
		switch {
		case code >= 400 && code < 600:
			var ce struct{ Code, Message string }
			if err := json.Unmarshal(b, &ce); err != nil || ce.Code == "" {
				t.Errorf("stream %s: %d %.300s is not a Connect error", c.name, code, b)
			}
		case code == http.StatusOK:
			if len(b) < 5 || b[0] != 2 {
				t.Errorf("stream %s: 200 with %q, not an end message alone", c.name, b)
				break
			}
			var end struct {
				Error struct{ Code, Message string } `json:"error"`
			}
			if err := json.Unmarshal(b[5:], &end); err != nil || end.Error.Code == "" || end.Error.Code == "unknown" {
				t.Errorf("stream %s: end message %q has no Connect error", c.name, b[5:])
			}
		default:
			t.Errorf("stream %s: %d %.300s", c.name, code, b)
		}
		stat("stream " + c.name)
	}

	// Nothing was lost, and the sandbox goes as it should.
	if code, b := do("GET", "/files?path=/home/user/kept.txt", nil, envd()...); code != http.StatusOK || string(b) != "kept" {
		t.Errorf("the file after all: %d %s", code, b)
	}
	if code, b := do("DELETE", "/sandboxes/"+sbx.SandboxID, nil, "X-API-KEY", e.key); code != http.StatusNoContent {
		t.Errorf("kill: %d %s", code, b)
	}
	e.noSessions(t, "the hostile requests")
	if b, _ := os.ReadFile(e.log); bytes.Contains(b, []byte("panic")) {
		t.Errorf("the gateway panicked:\n%s", b)
	}
}
