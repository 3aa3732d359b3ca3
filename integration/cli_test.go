package integration

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sandboxd/sandboxd/api"
)

func TestCLI(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, "")
	ok := func(stdin string, args ...string) string {
		t.Helper()
		out, stderr, code := d.ctl(t, stdin, args...)
		if code != 0 {
			t.Fatalf("sandboxctl %v: exit %d: %s", args, code, stderr)
		}
		return out
	}
	fail := func(wantCode int, wantErr string, args ...string) {
		t.Helper()
		_, stderr, code := d.ctl(t, "", args...)
		if code != wantCode || !strings.Contains(stderr, wantErr) {
			t.Fatalf("sandboxctl %v: exit %d, stderr %q; want exit %d with %q", args, code, stderr, wantCode, wantErr)
		}
	}

	if out := ok("", "version"); !strings.Contains(out, "Client:") || !strings.Contains(out, "Server:") || !strings.Contains(out, "Runtimes: runc") {
		t.Fatalf("version: %q", out)
	}
	if out := ok("", "info"); !strings.Contains(out, "Cgroup version:") || !strings.Contains(out, "User namespaces: on (host ids ") {
		t.Fatalf("info: %q", out)
	}
	var info api.Info
	if err := json.Unmarshal([]byte(ok("", "info", "--json")), &info); err != nil || info.APIVersion != "1" || !info.Seccomp.Enabled {
		t.Fatalf("info --json: %+v %v", info, err)
	}

	id := strings.TrimSpace(ok("", "create", "--memory", "256M", "--cpus", "0.5", "--pids", "64", "--label", "team=ml", "-e", "GREETING=hello"))
	t.Cleanup(func() { d.ctl(t, "", "rm", "-f", id) })
	var sessions []api.Session
	if err := json.Unmarshal([]byte(ok("", "inspect", id)), &sessions); err != nil || len(sessions) != 1 ||
		sessions[0].Limits.MemoryMB != 256 || sessions[0].Limits.CPUs != 0.5 || sessions[0].Limits.Pids != 64 || sessions[0].Labels["team"] != "ml" {
		t.Fatalf("inspect: %+v %v", sessions, err)
	}
	if out := ok("", "ls"); !strings.Contains(out, id) || !strings.Contains(out, "team=ml") {
		t.Fatalf("ls: %q", out)
	}
	if out := ok("", "ls", "-q", "--label", "team=other"); strings.TrimSpace(out) != "" {
		t.Fatalf("ls filtered: %q", out)
	}
	if out := ok("", "ls", "-q"); strings.TrimSpace(out) != id {
		t.Fatalf("ls -q: %q", out)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"ls", "--filter", "status=running", "--filter", "label=team=ml", "--format", "{{.ID}} {{.Status}} {{.Limits.MemoryMB}}"}, id + " running 256\n"},
		{[]string{"ls", "--filter", "status=stopped", "--format", "{{.ID}}"}, ""},
		{[]string{"ls", "-f", "label=team", "-f", "id=" + id[:4], "-q"}, id + "\n"},
		{[]string{"inspect", id, "--format", "{{index .Labels \"team\"}}"}, "ml\n"},
		{[]string{"info", "--format", "{{.APIVersion}}"}, api.Version + "\n"},
		{[]string{"node", "--format", "{{.State}}"}, "ready\n"},
	} {
		if out := ok("", tc.args...); out != tc.want {
			t.Errorf("%v: %q, want %q", tc.args, out, tc.want)
		}
	}
	if _, errOut, code := d.ctl(t, "", "ls", "--filter", "colour=red"); code == 0 || !strings.Contains(errOut, "bad --filter") {
		t.Errorf("ls --filter colour=red: %d %q", code, errOut)
	}

	// A name, or an id prefix, works wherever the id does.
	named := strings.TrimSpace(ok("", "create", "--name", "cli-named"))
	if out := ok("", "exec", "cli-named", "-c", "print('by name')"); out != "by name\n" {
		t.Errorf("exec by name: %q", out)
	}
	if out := ok("", "exec", named[:6], "-c", "print('by prefix')"); out != "by prefix\n" {
		t.Errorf("exec by prefix: %q", out)
	}
	if out := ok("", "ls", "--filter", "name=cli-named", "--format", "{{.Name}} {{.ID}}"); out != "cli-named "+named+"\n" {
		t.Errorf("ls by name: %q", out)
	}
	if _, errOut, code := d.ctl(t, "", "create", "--name", "cli-named"); code == 0 || !strings.Contains(errOut, "is taken by session "+named) {
		t.Errorf("a taken name: %d %q", code, errOut)
	}
	ok("", "rm", "cli-named")

	// wait returns once the session stops, saying why; prune deletes
	// stopped sessions, asking first.
	other := strings.TrimSpace(ok("", "create"))
	waited := make(chan string, 1)
	go func() {
		out, errOut, code := d.ctl(t, "", "wait", other)
		waited <- fmt.Sprintf("%d %s%s", code, out, errOut)
	}()
	time.Sleep(500 * time.Millisecond)
	ok("", "stop", other)
	select {
	case got := <-waited:
		if got != "0 "+other+" stopped: stopped by request\n" {
			t.Errorf("wait: %q", got)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("wait did not return once the session stopped")
	}
	if out := ok("", "wait", other); out != other+" stopped: stopped by request\n" {
		t.Errorf("wait of a stopped session: %q", out)
	}
	if _, errOut, code := d.ctl(t, "n\n", "prune"); code == 0 || !strings.Contains(errOut, "nothing deleted") {
		t.Errorf("prune answered no: %d %q", code, errOut)
	}
	if out := ok("y\n", "prune"); !strings.Contains(out, other) {
		t.Errorf("prune: %q", out)
	}
	if out := ok("", "ls", "-q"); strings.TrimSpace(out) != id {
		t.Errorf("after prune: %q", out)
	}

	ok("", "exec", id, "-c", "x = 20")
	if out := ok("", "exec", id, "-c", "x * 2 + 2"); out != "42\n" {
		t.Fatalf("exec result: %q", out)
	}
	if out := ok("import os\nprint(os.environ['GREETING'])\n", "exec", id, "-"); out != "hello\n" {
		t.Fatalf("exec from stdin: %q", out)
	}
	script := filepath.Join(t.TempDir(), "s.py")
	os.WriteFile(script, []byte("print('from file', x)"), 0o644)
	if out := ok("", "exec", id, "--file", script); out != "from file 20\n" {
		t.Fatalf("exec --file: %q", out)
	}
	// Words after the id are a command, as docker exec's: never a file,
	// never through a shell.
	if out := ok("", "exec", id, "--", "printf", "%s|", "a", "b c", "it's", "$HOME"); out != "a|b c|it's|$HOME|" {
		t.Fatalf("exec -- printf: %q", out)
	}
	if out := ok("", "exec", id, "pwd"); out != "/workspace\n" {
		t.Fatalf("exec pwd: %q", out)
	}
	if _, _, code := d.ctl(t, "", "exec", id, "--", "no-such-command"); code != 127 {
		t.Fatalf("exec of a missing command: exit %d, want 127", code)
	}
	if _, _, code := d.ctl(t, "", "exec", id, "--", "/etc/hostname"); code != 126 {
		t.Fatalf("exec of a file that is no program: exit %d, want 126", code)
	}
	if out := ok("", "exec", id, "--shell", "-c", "echo $((1+2))"); out != "3\n" {
		t.Fatalf("exec --shell: %q", out)
	}
	out, stderr, code := d.ctl(t, "", "exec", id, "-c", "1/0")
	if code != 1 || !strings.Contains(stderr, "ZeroDivisionError") || out != "" {
		t.Fatalf("exec error: %d %q %q", code, out, stderr)
	}
	if _, _, code := d.ctl(t, "", "exec", id, "--shell", "-c", "exit 5"); code != 5 {
		t.Fatalf("shell exit code: %d", code)
	}
	if _, stderr, code := d.ctl(t, "", "exec", id, "--timeout", "1", "-c", "import time; time.sleep(30)"); code != 124 || !strings.Contains(stderr, "timed out") {
		t.Fatalf("timeout exit code: %d %q", code, stderr)
	}
	var e api.Execution
	if err := json.Unmarshal([]byte(ok("", "exec", id, "--json", "-c", "x")), &e); err != nil || result(&e) != "20" {
		t.Fatalf("exec --json: %+v %v", e, err)
	}

	local := filepath.Join(t.TempDir(), "in.txt")
	os.WriteFile(local, []byte("payload"), 0o644)
	ok("", "cp", local, id+":sub/in.txt")
	if out := ok("", "exec", id, "--shell", "-c", "cat /workspace/sub/in.txt"); out != "payload" {
		t.Fatalf("cp in: %q", out)
	}
	back := filepath.Join(t.TempDir(), "back.txt")
	ok("", "cp", id+":/workspace/sub/in.txt", back)
	if b, _ := os.ReadFile(back); string(b) != "payload" {
		t.Fatalf("cp out: %q", b)
	}
	if out := ok("", "cp", id+":sub/in.txt", "-"); out != "payload" {
		t.Fatalf("cp to stdout: %q", out)
	}
	fail(125, "bad path", "cp", id+":../../etc/passwd", "-")
	fail(125, "exactly one side", "cp", "a", "b")

	if out := ok("", "stats", id); !strings.Contains(out, "running") || !strings.Contains(out, "DISK / LIMIT") || strings.Contains(out, "/ -") {
		t.Fatalf("stats: %q", out)
	}
	if out := ok("", "history", id, "-n", "2"); strings.Count(out, "\n") != 3 {
		t.Fatalf("history: %q", out)
	}
	ok("", "stop", id)
	fail(125, "start it first", "exec", id, "-c", "1")
	ok("", "start", id)
	ok("", "restart", id)
	// --all: every running (for stop) or stopped (for start) session.
	id2 := strings.TrimSpace(ok("", "create"))
	t.Cleanup(func() { d.ctl(t, "", "rm", "-f", id2) })
	if out := ok("", "stop", "--all"); out != id+"\n"+id2+"\n" && out != id2+"\n"+id+"\n" {
		t.Fatalf("stop --all: %q", out)
	}
	if out := ok("", "stop", "--all"); out != "" {
		t.Fatalf("stop --all with nothing running: %q", out)
	}
	fail(125, "start it first", "exec", id2, "-c", "1")
	if out := ok("", "start", "-a"); strings.Count(out, "\n") != 2 {
		t.Fatalf("start -a: %q", out)
	}
	fail(125, "ids or --all, not both", "stop", "--all", id)
	fail(125, "at least one session id (or --all)", "stop")

	if out := ok("", "run", "-c", "print(sum(range(10)))"); out != "45\n" {
		t.Fatalf("run: %q", out)
	}
	if out := ok("", "run", "--file", local+":data/x.txt", "--shell", "-c", "cat data/x.txt"); out != "payload" {
		t.Fatalf("run --file: %q", out)
	}

	fail(125, "no such session", "exec", "nope", "-c", "1")
	fail(125, "memory_mb", "create", "--memory", "1M")
	fail(125, "bad --memory", "create", "--memory", "lots")
	fail(125, "no code given", "exec", id)
	ok("", "rm", id)
	fail(125, "no such session", "rm", id)
	ok("", "rm", "-f", id)

	_, stderr, code = runCtl(t, filepath.Join(t.TempDir(), "none.sock"), nil, "", "ls")
	if code != 125 || !strings.Contains(stderr, "cannot connect to sandboxd at") || !strings.Contains(stderr, "is it running?") || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
		t.Fatalf("no daemon: %d %q", code, stderr)
	}
	if out := ok("", "completion", "bash"); !strings.Contains(out, "sandboxctl") {
		t.Fatal("bash completion")
	}
}

func TestDoctor(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, "")
	out, stderr, code := d.ctl(t, "", "doctor", "--data-dir", d.base)
	if code != 0 || !strings.Contains(out, "cgroups") || !strings.Contains(out, "seccomp") || !strings.Contains(out, "socket") {
		t.Fatalf("doctor: exit %d\n%s%s", code, out, stderr)
	}
	var results []struct{ Name, Status, Detail string }
	out, _, _ = d.ctl(t, "", "doctor", "--json", "--data-dir", d.base)
	if err := json.Unmarshal([]byte(out), &results); err != nil || len(results) < 8 {
		t.Fatalf("doctor --json: %v %q", err, out)
	}
	// runsc is installed for the tests: doctor runs a sandbox on the
	// daemon's platform, and lists the daemon's runtimes.
	byName := map[string]string{}
	for _, r := range results {
		byName[r.Name] = r.Status + " " + r.Detail
	}
	if got := byName["gVisor (runsc)"]; !strings.HasPrefix(got, "ok ") || !strings.Contains(got, "platform ptrace") {
		t.Errorf("doctor's runsc check: %q", got)
	}
	if got := byName["runtimes (daemon)"]; !strings.HasPrefix(got, "ok ") || !strings.Contains(got, "runc (default)") || !strings.Contains(got, "runsc") {
		t.Errorf("doctor's runtimes: %q", got)
	}
	out, _, _ = d.ctl(t, "", "doctor", "--json", "--data-dir", d.base, "--runsc", "/nonexistent/runsc")
	if !strings.Contains(out, "not installed") {
		t.Errorf("doctor with a runsc that is not there: %s", out)
	}
	_, _, code = runCtl(t, filepath.Join(t.TempDir(), "none.sock"), nil, "", "doctor")
	if code != 1 {
		t.Fatalf("doctor without a daemon must fail: %d", code)
	}
}
