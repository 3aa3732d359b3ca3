package main

import (
	"bytes"
	"errors"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestMetricsAddrFailsTheStart: a bad metrics_addr, and one whose port is
// taken, stop sandboxd before it touches any state, exit status 1, with
// one line that names the setting. (The socket is made, and removed,
// first: no root is needed to get that far.) --validate refuses the bad one too.
func TestMetricsAddrFailsTheStart(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	for _, tc := range []struct{ name, addr, want string }{
		{"bad", "9464", `sandboxd: CONFIG:2: metrics_addr "9464" is not an address to serve metrics on`},
		{"taken", taken.Addr().String(), "sandboxd: metrics_addr " + taken.Addr().String() + ": listen tcp " + taken.Addr().String() + ": bind: address already in use"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, args := dataDir(t)
			cfg := args[1]
			if err := os.WriteFile(cfg, []byte("socket_group = \"\"\nmetrics_addr = \""+tc.addr+"\"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			want := strings.ReplaceAll(tc.want, "CONFIG", cfg)
			cmd := exec.Command(os.Args[0], args...)
			cmd.Env = append(os.Environ(), asMain+"=1")
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != 1 {
				t.Fatalf("%v, want exit status 1\nstderr: %s", err, stderr.String())
			}
			out := stderr.String()
			if strings.Count(out, "\n") != 1 || !strings.HasPrefix(out, want) || stdout.Len() != 0 {
				t.Fatalf("want one line starting %q, got:\n%s", want, out)
			}
			// The socket, made first, does not outlive the failed start.
			if _, err := os.Stat(args[len(args)-1]); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the socket is left: %v", err)
			}
			if tc.name == "bad" {
				if _, err := execute(t, "--config", cfg, "--validate"); err == nil || !strings.Contains(err.Error(), "metrics_addr") {
					t.Fatalf("--validate: %v", err)
				}
			}
		})
	}
}
