package integration

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/containerd/errdefs"

	"github.com/sandboxd/sandboxd/api"
)

// TestBackgroundProcesses: sandboxctl exec -d starts a command that
// outlives the call; top lists it, logs -f follows its output to its end
// (and says its status), kill ends another; the agent cannot be killed;
// a background process outlives a daemon restart and goes with the
// session's stop.
func TestBackgroundProcesses(t *testing.T) {
	t.Parallel()
	eachRuntime(t, func(t *testing.T, rt, cfg string) {
		d := startDaemon(t, cfg)
		id := d.session(t, nil)
		out, stderr, code := d.ctl(t, "", "exec", "-d", id, "--", "sh", "-c", "for i in 1 2 3; do echo tick $i; sleep 0.4; done; echo bye >&2; exit 4")
		pid := strings.TrimSpace(out)
		if code != 0 || !isPIDString(pid) {
			t.Fatalf("exec -d: %d %q %q", code, out, stderr)
		}
		if out, stderr, code = d.ctl(t, "", "logs", "-f", id, pid); code != 0 || out != "tick 1\ntick 2\ntick 3\nbye\n" {
			t.Fatalf("logs -f: %d %q %q", code, out, stderr)
		}
		if rt == "runc" && !strings.Contains(stderr, "exited with status 4") {
			t.Errorf("logs -f's end: %q", stderr)
		}

		out, _, code = d.ctl(t, "", "exec", "-d", id, "--", "sleep", "300")
		sleeper := strings.TrimSpace(out)
		if code != 0 || !isPIDString(sleeper) {
			t.Fatalf("exec -d sleep: %d %q", code, out)
		}
		if out, _, code = d.ctl(t, "", "top", id); code != 0 || !strings.Contains(out, "sleep") || !strings.Contains(out, "COMMAND") {
			t.Fatalf("top: %d %q", code, out)
		}
		if out, _, code = d.ctl(t, "", "top", id, "--format", "{{.PID}} {{.Detached}}"); code != 0 || !strings.Contains(out, sleeper+" true\n") || !strings.Contains(out, "1 false\n") {
			t.Fatalf("top --format: %d %q", code, out)
		}
		if _, stderr, code = d.ctl(t, "", "kill", id, "1"); code != 125 || !strings.Contains(stderr, "agent") {
			t.Fatalf("kill 1: %d %q", code, stderr)
		}
		if _, stderr, code = d.ctl(t, "", "kill", "-s", "KILL", id, sleeper); code != 0 {
			t.Fatalf("kill: %d %q", code, stderr)
		}
		for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			out, _, _ = d.ctl(t, "", "top", id, "--format", "{{.PID}}")
			if !strings.Contains("\n"+out, "\n"+sleeper+"\n") {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the killed process is still listed: %q", out)
			}
		}

		// One more outlives a daemon restart, and goes with the stop.
		out, _, _ = d.ctl(t, "", "exec", "-d", id, "--", "sh", "-c", "echo up; exec sleep 300")
		bg := strings.TrimSpace(out)
		d.bounce("restart")
		if out, _, code = d.ctl(t, "", "top", id, "--format", "{{.PID}}"); code != 0 || !strings.Contains("\n"+out, "\n"+bg+"\n") {
			t.Fatalf("after a restart: %d %q", code, out)
		}
		if out, _, code = d.ctl(t, "", "logs", id, bg); code != 0 || out != "up\n" {
			t.Fatalf("logs after a restart: %d %q", code, out)
		}
		if _, _, code = d.ctl(t, "", "stop", id); code != 0 {
			t.Fatal("stop")
		}
		if _, _, code = d.ctl(t, "", "start", id); code != 0 {
			t.Fatal("start")
		}
		if out, _, _ = d.ctl(t, "", "top", id, "--format", "{{.Command}}"); strings.Contains(out, "sleep") {
			t.Fatalf("a background process outlived its session's stop: %q", out)
		}
	})
}

// TestProcessTooLargeToExec: a background command the kernel would not
// exec (E2BIG: one argument or variable over 128 KiB, or all over the exec
// limit) is a 400, not a pid that exits 255 with an empty log; one just
// under each bound runs.
func TestProcessTooLargeToExec(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, "")
	id := d.session(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	script := []string{"sh", "-c", `n=0; for a; do n=$((n + ${#a})); done; echo "$# $n"`, "_"}
	many := func(n, size int) []string {
		argv := append([]string{}, script...)
		for range n {
			argv = append(argv, strings.Repeat("a", size))
		}
		return argv
	}
	for _, tc := range []struct {
		name string
		req  api.ProcessRequest
	}{
		{"a 3 MB argument", api.ProcessRequest{Argv: many(1, 3<<20)}},
		{"an argument of 128 KiB", api.ProcessRequest{Argv: many(1, 128<<10)}},
		{"20 arguments of 120 kB", api.ProcessRequest{Argv: many(20, 120_000)}},
		{"a variable of 200 kB", api.ProcessRequest{Argv: many(1, 1), Env: map[string]string{"BIG": strings.Repeat("v", 200_000)}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := d.c.StartProcess(ctx, id, &tc.req)
			if !errdefs.IsInvalidArgument(err) || !strings.Contains(err.Error(), "E2BIG") {
				pid := 0
				if p != nil {
					pid = p.PID
				}
				t.Fatalf("StartProcess = pid %d, %v; want a 400 that says E2BIG", pid, err)
			}
		})
	}
	for _, tc := range []struct {
		name, want string
		argv       []string
	}{
		{"an argument of 128 KiB less its NUL", "1 131071", many(1, 128<<10-1)},
		{"15 arguments of 120 kB", "15 1800000", many(15, 120_000)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := d.c.StartProcess(ctx, id, &api.ProcessRequest{Argv: tc.argv})
			if err != nil {
				t.Fatal(err)
			}
			for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
				r, running, exit, err := d.c.ProcessLogs(ctx, id, p.PID, 0)
				if err != nil {
					t.Fatal(err)
				}
				out, _ := io.ReadAll(r)
				r.Close()
				if !running && exit != nil {
					if *exit != 0 || strings.TrimSpace(string(out)) != tc.want {
						t.Fatalf("exit %d, log %q; want 0, %q", *exit, out, tc.want)
					}
					return
				}
				if time.Now().After(deadline) {
					t.Fatalf("pid %d still runs", p.PID)
				}
			}
		})
	}
}

func isPIDString(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}
