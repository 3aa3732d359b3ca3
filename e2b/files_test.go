package e2b

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"io"
	"maps"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
)

func TestPaths(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ in, want string }{
		{"a.txt", "/workspace/a.txt"},
		{"/home/user", "/workspace"},
		{"/home/user/d/../b", "/workspace/b"},
		{"/tmp/x", "/tmp/x"},
		{"/home/username", "/home/username"},
		{"../../etc/passwd", "/etc/passwd"},
	} {
		got, err := toSandbox(c.in)
		if err != nil || got != c.want {
			t.Errorf("toSandbox(%q) = %q %v, want %q", c.in, got, err, c.want)
		}
		if c.want == "/workspace" && fromSandbox(got) != "/home/user" {
			t.Errorf("fromSandbox(%q) = %q", got, fromSandbox(got))
		}
	}
	if _, err := toSandbox(""); err == nil {
		t.Error("an empty path passed")
	}
}

func TestFiles(t *testing.T) {
	t.Parallel()
	tg := newTestGateway(t)
	s := tg.create(tg.key, `{"templateID":"base"}`)
	send := func(method, url, ctype, enc string, body []byte) (int, string) {
		t.Helper()
		r := httptest.NewRequest(method, url, bytes.NewReader(body))
		r.Host = tg.listen
		r.Header.Set("E2b-Sandbox-Id", s.SandboxID)
		r.Header.Set("E2b-Sandbox-Port", "49983")
		r.Header.Set("X-Access-Token", s.EnvdAccessToken)
		if ctype != "" {
			r.Header.Set("Content-Type", ctype)
		}
		if enc != "" {
			r.Header.Set("Content-Encoding", enc)
		}
		w := httptest.NewRecorder()
		tg.g.ServeHTTP(w, r)
		b, _ := io.ReadAll(w.Result().Body)
		return w.Code, string(b)
	}
	// One raw file, relative to the home.
	code, out := send("POST", "/files?path=notes.txt", "application/octet-stream", "", []byte("hello"))
	var infos []writeInfo
	if err := json.Unmarshal([]byte(out), &infos); code != http.StatusOK || err != nil || len(infos) != 1 || infos[0].Path != "/home/user/notes.txt" || infos[0].Name != "notes.txt" {
		t.Fatalf("write: %d %s", code, out)
	}
	if string(tg.d.files[s.SandboxID+":/workspace/notes.txt"]) != "hello" {
		t.Fatal("the file was not written under /workspace")
	}
	if code, out := send("GET", "/files?path=/home/user/notes.txt", "", "", nil); code != http.StatusOK || out != "hello" {
		t.Fatalf("read: %d %q", code, out)
	}
	// Metadata (envd 0.6.2): X-Metadata-* headers, keys lower-cased.
	r := httptest.NewRequest("POST", "/files?path=m.txt", strings.NewReader("m"))
	r.Host = tg.listen
	for k, v := range map[string]string{"E2b-Sandbox-Id": s.SandboxID, "E2b-Sandbox-Port": "49983", "X-Access-Token": s.EnvdAccessToken,
		"Content-Type": "application/octet-stream", "X-Metadata-Author": "ada", "x-metadata-PURPOSE": "test"} {
		r.Header[k] = []string{v}
	}
	w := httptest.NewRecorder()
	tg.g.ServeHTTP(w, r)
	want := map[string]string{"author": "ada", "purpose": "test"}
	if err := json.Unmarshal(w.Body.Bytes(), &infos); w.Code != http.StatusOK || err != nil || !maps.Equal(infos[0].Metadata, want) {
		t.Fatalf("write with metadata: %d %s", w.Code, w.Body)
	}
	if got := tg.d.meta[s.SandboxID+":/workspace/m.txt"]; !maps.Equal(got, want) {
		t.Fatalf("the daemon was given %v", got)
	}
	if code, out := send("POST", "/files?path=m.txt", "application/octet-stream", "", []byte("m")); code != http.StatusOK || strings.Contains(out, "metadata") || tg.d.meta[s.SandboxID+":/workspace/m.txt"] != nil {
		t.Fatalf("a write without: %d %s", code, out)
	}
	// Gzip.
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write([]byte("zipped"))
	zw.Close()
	if code, out := send("POST", "/files?path=/tmp/z", "application/octet-stream", "gzip", gz.Bytes()); code != http.StatusOK {
		t.Fatalf("gzip write: %d %s", code, out)
	}
	if string(tg.d.files[s.SandboxID+":/tmp/z"]) != "zipped" {
		t.Fatal("the gzip body was not unpacked")
	}
	// Several files in one form.
	var form bytes.Buffer
	mw := multipart.NewWriter(&form)
	for name, body := range map[string]string{"a/one.txt": "1", "/tmp/two.txt": "2"} {
		fw, _ := mw.CreateFormFile("file", name)
		fw.Write([]byte(body))
	}
	mw.Close()
	code, out = send("POST", "/files", mw.FormDataContentType(), "", form.Bytes())
	if err := json.Unmarshal([]byte(out), &infos); code != http.StatusOK || err != nil || len(infos) != 2 {
		t.Fatalf("multipart write: %d %s", code, out)
	}
	if string(tg.d.files[s.SandboxID+":/workspace/a/one.txt"]) != "1" || string(tg.d.files[s.SandboxID+":/tmp/two.txt"]) != "2" {
		t.Fatalf("multipart files: %v", tg.d.files)
	}
	for _, c := range []struct {
		method, url, ctype, enc string
		body                    string
		want                    int
	}{
		{"GET", "/files?path=missing", "", "", "", http.StatusNotFound},
		{"GET", "/files?path=/home/user", "", "", "", http.StatusBadRequest},
		{"GET", "/files", "", "", "", http.StatusBadRequest},
		{"POST", "/files?path=/etc/passwd", "application/octet-stream", "", "x", http.StatusBadRequest},
		{"POST", "/files?path=x", "application/octet-stream", "gzip", "not gzip", http.StatusBadRequest},
		{"POST", "/files?path=x", "multipart/form-data; boundary=zz", "", "garbage", http.StatusBadRequest},
	} {
		if code, out := send(c.method, c.url, c.ctype, c.enc, []byte(c.body)); code != c.want {
			t.Errorf("%s %s: %d %s, want %d", c.method, c.url, code, out, c.want)
		}
	}
}

// sdkSignature is a signature as E2B's SDK computes it (getSignature).
func sdkSignature(path, op, user, token string, exp int64) string {
	raw := path + ":" + op + ":" + user + ":" + token
	if exp != 0 {
		raw += ":" + strconv.FormatInt(exp, 10)
	}
	sum := sha256.Sum256([]byte(raw))
	return "v1_" + strings.TrimRight(base64.StdEncoding.EncodeToString(sum[:]), "=")
}

func TestSignedFiles(t *testing.T) {
	t.Parallel()
	tg := newTestGateway(t)
	s := tg.create(tg.key, `{"templateID":"base"}`)
	other := tg.create(tg.key, `{"templateID":"base"}`)
	signed := func(path, op, user string, exp int64) string {
		q := url.Values{"path": {path}, "signature": {sdkSignature(path, op, user, s.EnvdAccessToken, exp)}}
		if user != "" {
			q.Set("username", user)
		}
		if exp != 0 {
			q.Set("signature_expiration", strconv.FormatInt(exp, 10))
		}
		return "/files?" + q.Encode()
	}
	// uploadUrl and downloadUrl fetched as they are: no header names the
	// sandbox, the signature does.
	if code, out, _ := tg.do("POST", signed("up.txt", "write", "user", 0), "", "uploaded", "Content-Type", "application/octet-stream"); code != http.StatusOK {
		t.Fatalf("signed upload: %d %s", code, out)
	}
	if string(tg.d.files[s.SandboxID+":/workspace/up.txt"]) != "uploaded" {
		t.Fatalf("the signed upload went elsewhere: %v", tg.d.files)
	}
	// A form, as uploadUrl's users send: the file's name on their disk
	// yields to the URL's path, as envd's.
	var form bytes.Buffer
	mw := multipart.NewWriter(&form)
	fw, _ := mw.CreateFormFile("file", "local-name.txt")
	fw.Write([]byte("from a form"))
	mw.Close()
	if code, out, _ := tg.do("POST", signed("/tmp/form.txt", "write", "", 0), "", form.String(), "Content-Type", mw.FormDataContentType()); code != http.StatusOK || !strings.Contains(out, `"/tmp/form.txt"`) {
		t.Fatalf("signed form upload: %d %s", code, out)
	}
	if string(tg.d.files[s.SandboxID+":/tmp/form.txt"]) != "from a form" {
		t.Fatalf("the form went elsewhere: %v", tg.d.files)
	}
	later := tg.now.Unix() + 60
	if code, out, _ := tg.do("GET", signed("up.txt", "read", "", later), "", ""); code != http.StatusOK || out != "uploaded" {
		t.Fatalf("signed download: %d %s", code, out)
	}
	// With the SDK's headers but no token, the signature still serves.
	if code, out, _ := tg.do("GET", signed("up.txt", "read", "user", 0), "", "", "E2b-Sandbox-Id", s.SandboxID, "E2b-Sandbox-Port", "49983"); code != http.StatusOK || out != "uploaded" {
		t.Fatalf("signed download with headers: %d %s", code, out)
	}
	sig := sdkSignature("up.txt", "read", "", s.EnvdAccessToken, 0)
	for _, c := range []struct {
		name, method, url string
		hdr               []string
		want              int
		msg               string
	}{
		{"a read's signature for a write", "POST", signed("up.txt", "read", "", 0), nil, http.StatusUnauthorized, "invalid signature"},
		{"another path", "GET", "/files?path=other.txt&signature=" + url.QueryEscape(sig), nil, http.StatusUnauthorized, "invalid signature"},
		{"another user", "GET", "/files?path=up.txt&username=root&signature=" + url.QueryEscape(sig), nil, http.StatusUnauthorized, "invalid signature"},
		{"expired", "GET", signed("up.txt", "read", "", tg.now.Unix()-1), nil, http.StatusUnauthorized, "expired"},
		{"an expiration moved", "GET", signed("up.txt", "read", "", later) + "0", nil, http.StatusUnauthorized, "invalid signature"},
		{"a bad expiration", "GET", "/files?path=up.txt&signature=x&signature_expiration=soon", []string{"E2b-Sandbox-Id", s.SandboxID, "E2b-Sandbox-Port", "49983"}, http.StatusBadRequest, "Unix seconds"},
		{"another sandbox's", "GET", signed("up.txt", "read", "", 0), []string{"E2b-Sandbox-Id", other.SandboxID, "E2b-Sandbox-Port", "49983"}, http.StatusUnauthorized, "invalid signature"},
		{"no signature nor token", "GET", "/files?path=up.txt", []string{"E2b-Sandbox-Id", s.SandboxID, "E2b-Sandbox-Port", "49983"}, http.StatusUnauthorized, "no signature"},
		{"a wrong token beside a signature", "GET", signed("up.txt", "read", "", 0), []string{"E2b-Sandbox-Id", s.SandboxID, "E2b-Sandbox-Port", "49983", "X-Access-Token", "wrong"}, http.StatusUnauthorized, "token"},
		{"a signature elsewhere than /files", "POST", "/filesystem.Filesystem/Stat?signature=" + url.QueryEscape(sig), []string{"E2b-Sandbox-Id", s.SandboxID, "E2b-Sandbox-Port", "49983"}, http.StatusUnauthorized, "token"},
	} {
		code, out, _ := tg.do(c.method, c.url, "", "", c.hdr...)
		var e apiError
		if err := json.Unmarshal([]byte(out), &e); code != c.want || err != nil || e.Code != c.want || !strings.Contains(e.Message, c.msg) {
			t.Errorf("%s: %d %s, want %d with %q", c.name, code, out, c.want, c.msg)
		}
	}
}
