package integration

import (
	"strings"
	"testing"
	"time"
)

// TestBackgroundProcesses: sandboxctl exec -d starts a command that
// outlives the call; top lists it, logs -f follows its output to its end
// (and says its status), kill ends another; the agent cannot be killed;
// a background process outlives a daemon restart and goes with the
// session's stop.
func TestBackgroundProcesses(t *testing.T) {
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
