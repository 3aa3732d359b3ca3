package main

import (
	"bufio"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestMCPBridgeDrains runs the bridge on the host as a session would, and
// speaks to it as mcp-proxy does: once stdin's end is sent (a frame of
// length 0), the command's stdin closes and its output still comes, to
// its end; the bridge exits with the command's status.
func TestMCPBridgeDrains(t *testing.T) {
	for _, tc := range []struct {
		name, stdin, script, out string
		code                     int
	}{
		{"output after stdin ends", "hi\n", "echo out1; cat; echo out2", "out1\nhi\nout2\n", 0},
		{"the exit code", "hi\n", "cat; exit 3", "hi\n", 3},
		{"stdin in many frames", strings.Repeat("0123456789", 30_000), "cat; echo", strings.Repeat("0123456789", 30_000) + "\n", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			argv, _ := json.Marshal([]string{"sh", "-c", tc.script})
			cmd := exec.Command("python3", "-c", mcpBridge)
			cmd.Env = append(os.Environ(), "SANDBOXD_MCP_ARGV="+string(argv))
			cmd.Stderr = os.Stderr
			stdout, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
			port, err := bufio.NewReader(stdout).ReadString('\n')
			if err != nil {
				t.Fatal(err)
			}
			conn, err := net.Dial("tcp", "127.0.0.1:"+strings.TrimSpace(port))
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			_ = conn.SetDeadline(time.Now().Add(30 * time.Second))
			if _, err := io.WriteString(conn, "GET / HTTP/1.1\r\nHost: sandbox\r\nConnection: Upgrade\r\nUpgrade: "+mcpBridgeProtocol+"\r\n\r\n"); err != nil {
				t.Fatal(err)
			}
			br := bufio.NewReader(conn)
			resp, err := http.ReadResponse(br, nil)
			if err != nil || resp.StatusCode != http.StatusSwitchingProtocols {
				t.Fatalf("upgrade: %v %v", resp, err)
			}
			go func() { _ = copyFramed(conn, strings.NewReader(tc.stdin)) }()
			out, err := io.ReadAll(br)
			if err != nil || string(out) != tc.out {
				t.Errorf("output %d bytes %.100q, %v; want %.100q", len(out), out, err, tc.out)
			}
			err = cmd.Wait()
			if code := cmd.ProcessState.ExitCode(); code != tc.code {
				t.Errorf("the bridge exits %d (%v), want %d", code, err, tc.code)
			}
		})
	}
}
