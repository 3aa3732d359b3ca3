package server

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/sandboxd/sandboxd/api"
)

// portsFront serves the router over real HTTP (the proxy hijacks for
// upgrades, which a recorder cannot), as if testCaller sent everything,
// with session s1's port 8000 served by a test server.
func portsFront(t *testing.T) string {
	t.Helper()
	inside := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/ws" {
			c, rw, err := http.NewResponseController(w).Hijack()
			if err != nil {
				t.Error(err)
				return
			}
			defer c.Close()
			rw.WriteString("HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: test\r\n\r\n")
			rw.Flush()
			_, _ = io.Copy(c, rw)
			return
		}
		body, _ := io.ReadAll(r.Body)
		fmt.Fprintf(w, "%s %s ?%s host=%s origin=%s body=%s", r.Method, r.URL.EscapedPath(), r.URL.RawQuery, r.Host, r.Header.Get("Origin"), body)
	}))
	t.Cleanup(inside.Close)
	s := newTestServer(&fakeBackend{ports: map[int]string{8000: inside.Listener.Addr().String()}}, Options{}, io.Discard)
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.Handler().ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), credKey{}, testCaller)))
	}))
	t.Cleanup(front.Close)
	return front.URL
}

func TestPortProxy(t *testing.T) {
	front := portsFront(t)
	for _, tc := range []struct {
		method, path, body string
		header             []string
		status             int
		want               string
	}{
		{"GET", "/v1/sessions/s1/ports/8000/a%2Fb/c?x=1&y=2", "", nil, 200, "GET /a%2Fb/c ?x=1&y=2 host=localhost:8000 origin= body="},
		{"GET", "/v1/sessions/s1/ports/8000", "", nil, 200, "GET / ?"},
		{"PUT", "/v1/sessions/s1/ports/8000/up", "data", nil, 200, "PUT /up ? host=localhost:8000 origin= body=data"},
		{"DELETE", "/v1/sessions/s1/ports/8000/x", "", []string{api.ProxiedOriginHeader, "http://127.0.0.1:5000"}, 200, "origin=http://127.0.0.1:5000"},
		{"GET", "/v1/sessions/s1/ports/8000/", "", []string{"Origin", "http://evil.example"}, 400, api.CodeInvalidArgument},
		{"GET", "/v1/sessions/s1/ports/9999/", "", nil, 502, api.CodeBadGateway},
		{"GET", "/v1/sessions/s1/ports/http/", "", nil, 400, api.CodeInvalidArgument},
		{"GET", "/v1/sessions/nope/ports/8000/", "", nil, 404, api.CodeNotFound},
	} {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			req, _ := http.NewRequest(tc.method, front+tc.path, strings.NewReader(tc.body))
			for i := 0; i+1 < len(tc.header); i += 2 {
				req.Header.Set(tc.header[i], tc.header[i+1])
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tc.status || !strings.Contains(string(b), tc.want) {
				t.Fatalf("%d %s, want %d with %q", resp.StatusCode, b, tc.status, tc.want)
			}
		})
	}
}

func TestPortProxyUpgrade(t *testing.T) {
	front := portsFront(t)
	c, err := net.Dial("tcp", strings.TrimPrefix(front, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	fmt.Fprint(c, "GET /v1/sessions/s1/ports/8000/ws HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: test\r\n\r\n")
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("upgrade: %v %v", resp, err)
	}
	for _, msg := range []string{"ping", "pong"} {
		fmt.Fprint(c, msg)
		buf := make([]byte, len(msg))
		if _, err := io.ReadFull(br, buf); err != nil || string(buf) != msg {
			t.Fatalf("echo %q: %q %v", msg, buf, err)
		}
	}
}
