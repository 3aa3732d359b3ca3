package integration

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sandboxd/sandboxd/api"
)

// serversCode starts, in a session's interpreter, an HTTP server of
// /workspace on 127.0.0.1:8000 and an "upgrade" server on 8002 that
// answers 101 and echoes.
const serversCode = `
import threading, http.server, socket, functools, os
os.makedirs("/workspace/site", exist_ok=True)
open("/workspace/site/hello.txt", "w").write("hello from inside")
h = functools.partial(http.server.SimpleHTTPRequestHandler, directory="/workspace/site")
srv = http.server.ThreadingHTTPServer(("127.0.0.1", 8000), h)
threading.Thread(target=srv.serve_forever, daemon=True).start()
def upgrade():
    l = socket.socket()
    l.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    l.bind(("127.0.0.1", 8002))
    l.listen()
    while True:
        c, _ = l.accept()
        buf = b""
        while b"\r\n\r\n" not in buf:
            buf += c.recv(1024)
        c.sendall(b"HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: test\r\n\r\n")
        while True:
            b = c.recv(1024)
            if not b:
                break
            c.sendall(b)
        c.close()
threading.Thread(target=upgrade, daemon=True).start()
`

func TestPortProxy(t *testing.T) {
	t.Parallel()
	netRuntimes(t, func(t *testing.T, rt, cfg string) {
		d := startDaemon(t, cfg)
		for _, network := range []string{api.NetworkNone, api.NetworkOpen} {
			t.Run(network, func(t *testing.T) {
				id := d.session(t, &api.CreateSessionRequest{Network: network})
				if e := d.py(t, id, serversCode); e.Status != api.StatusOK {
					t.Fatalf("servers: %+v %s", e.Error, e.Stderr)
				}
				status, body := d.raw(t, "GET", "/v1/sessions/"+id+"/ports/8000/hello.txt", "")
				if status != 200 || string(body) != "hello from inside" {
					t.Fatalf("GET through the proxy: %d %s", status, body)
				}
				if status, body := d.raw(t, "GET", "/v1/sessions/"+id+"/ports/8001/", ""); status != 502 || !strings.Contains(string(body), api.CodeBadGateway) {
					t.Fatalf("nothing listening: %d %s", status, body)
				}

				// An upgraded connection carries bytes both ways.
				c, err := net.Dial("unix", d.socket)
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				_ = c.SetDeadline(time.Now().Add(10 * time.Second))
				fmt.Fprintf(c, "GET /v1/sessions/%s/ports/8002/ws HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: test\r\n\r\n", id)
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

				// sandboxctl port serves it on a local URL until interrupted.
				cmd := exec.Command(filepath.Join(bin, "sandboxctl"), "--socket", d.socket, "port", id, "8000")
				out, err := cmd.StdoutPipe()
				if err != nil {
					t.Fatal(err)
				}
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				defer cmd.Process.Kill()
				url, err := bufio.NewReader(out).ReadString('\n')
				if err != nil {
					t.Fatal(err)
				}
				resp, err = http.Get(strings.TrimSpace(url) + "hello.txt")
				if err != nil {
					t.Fatal(err)
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 || string(b) != "hello from inside" {
					t.Fatalf("GET %shello.txt: %d %s", url, resp.StatusCode, b)
				}
				_ = cmd.Process.Signal(syscall.SIGINT)
				if err := cmd.Wait(); err != nil {
					t.Fatalf("sandboxctl port after SIGINT: %v", err)
				}
			})
		}
		if _, errOut, code := d.ctl(t, "", "port", "nosuchsession", "8000"); code == 0 || !strings.Contains(errOut, "nosuchsession") {
			t.Errorf("port of a missing session: %d %s", code, errOut)
		}
		if _, errOut, code := d.ctl(t, "", "port", "x", "8000", "--listen", "0.0.0.0:0"); code == 0 || !strings.Contains(errOut, "loopback") {
			t.Errorf("a non-loopback listen was taken: %s", errOut)
		}
	})
}
