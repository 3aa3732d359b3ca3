package integration

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sandboxd/sandboxd/api"
)

// TestSandboxIsolation runs probes inside a sandbox; each prints one word
// that the table expects.
func TestSandboxIsolation(t *testing.T) {
	t.Parallel()
	eachRuntime(t, func(t *testing.T, rt, cfg string) {
		d := startDaemon(t, cfg)
		id := d.session(t, nil)
		// A marker the sandbox must not see, and host state it must not change.
		marker := "/root/sandboxd-secret-marker"
		if err := os.WriteFile(marker, []byte("secret"), 0o600); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Remove(marker) })

		// want is what both runtimes answer, unless gvisor says what
		// gVisor does instead (docs/runsc.md lists each difference).
		probes := []struct {
			name, lang, code, want string
			gvisor                 string
		}{
			{"runs as the sandbox user", "shell", "id -un", "sandbox", ""},
			// gVisor shows a namespace of its own; its processes on the host
			// are in the sandbox's (checked below).
			{"in a user namespace", "shell", "id -u; awk '{print $1, $3}' /proc/self/uid_map", "1000\n0 65536", "1000\n0 4294967295"},
			{"host root is nobody", "python", "import os, pwd\nprint(pwd.getpwuid(os.stat('/usr/bin/python3').st_uid).pw_name)", "nobody", ""},
			{"no capabilities", "shell", "grep CapEff /proc/self/status | awk '{print $2}'", "0000000000000000", ""},
			{"no_new_privs", "python", "import ctypes\nprint(ctypes.CDLL(None).prctl(39, 0, 0, 0, 0))", "1", ""},
			{"seccomp filter on", "shell", "grep '^Seccomp:' /proc/self/status | awk '{print $2}'", "2", ""},
			{"no host processes", "python", "import os\nprint(len([p for p in os.listdir('/proc') if p.isdigit()]) < 10)", "True", ""},
			{"no /etc/shadow", "shell", "test -e /etc/shadow && echo present || echo absent", "absent", ""},
			{"no host home", "shell", "test -e " + marker + " && echo present || echo absent", "absent", ""},
			{"no private keys", "shell", "test -e /etc/ssl/private && echo present || echo absent", "absent", ""},
			{"CA certificates", "shell", "test -d /etc/ssl/certs && echo present || echo absent", "present", ""},
			{"only lo", "python", "import socket\nprint(' '.join(n for _, n in socket.if_nameindex()))", "lo", ""},
			{"no network egress", "python", "import socket\ns = socket.socket()\ns.settimeout(2)\ntry:\n    s.connect(('127.0.0.2', 9))\n    print('connected')\nexcept OSError as e:\n    print('refused' if e.errno in (111, 101) else e)", "refused", ""},
			{"/usr read-only", "shell", "touch /usr/x 2>/dev/null && echo wrote || echo denied", "denied", ""},
			{"/etc read-only", "shell", "touch /etc/x 2>/dev/null && echo wrote || echo denied", "denied", ""},
			{"/ read-only", "shell", "touch /x 2>/dev/null && echo wrote || echo denied", "denied", ""},
			{"/workspace writable", "shell", "touch /workspace/x && echo wrote", "wrote", ""},
			{"/tmp writable", "shell", "touch /tmp/x && echo wrote", "wrote", ""},
			{"/proc/sys read-only", "shell", "echo 1 > /proc/sys/kernel/sysrq 2>/dev/null && echo wrote || echo denied", "denied", ""},
			{"no cgroupfs", "shell", "ls /sys/fs/cgroup 2>/dev/null | wc -l", "0", ""},
			{"/proc/kcore masked", "shell", "test -s /proc/kcore && echo readable || echo masked", "masked", ""},
			{"unshare user ns denied", "python", "import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\nprint('ok' if libc.unshare(0x10000000) == 0 else 'denied')", "denied", ""},
			{"unshare command fails", "shell", "unshare -Ur true 2>/dev/null && echo ok || echo denied", "denied", ""},
			{"mount denied", "python", "import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\nprint('ok' if libc.mount(b'none', b'/tmp', b'tmpfs', 0, None) == 0 else 'denied')", "denied", ""},
			{"clone with new namespace denied", "python", "import ctypes, os\nlibc = ctypes.CDLL(None, use_errno=True)\nr = libc.syscall(56, 0x40000000 | 17, 0, 0, 0, 0)\nprint('denied' if r == -1 else 'ok')\nif r == 0: os._exit(0)", "denied", ""},
			{"ptrace denied", "python", "import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\nprint('ok' if libc.ptrace(16, 1, 0, 0) == 0 else 'denied')", "denied", ""},
			{"keyctl denied", "python", "import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\nprint('ok' if libc.syscall(250, 0, 0, 0, 0, 0) >= 0 else 'denied')", "denied", ""},
			{"mknod denied", "shell", "mknod /tmp/mem c 1 1 2>/dev/null && echo made || echo denied", "denied", ""},
			{"agent socket not visible", "shell", "find / \\( -path /proc -o -path /sys -o -path /usr \\) -prune -o -name agent.sock -print 2>/dev/null | wc -l", "0", ""},
			{"cannot replace the agent socket", "python", "import os\ntry:\n    os.rename('/run/sandboxd/agent.sock', '/tmp/a')\n    print('moved')\nexcept OSError:\n    print('denied')", "denied", ""},
			{"cannot signal the agent", "python", "import os, signal\ntry:\n    os.kill(1, signal.SIGKILL)\nexcept OSError:\n    pass\nprint('alive')", "alive", ""},
			// The kernel reads a pid's low 32 bits: a filter that compares
			// all 64 would let this one through.
			{"cannot signal the agent otherwise", "python", "import ctypes\nlibc = ctypes.CDLL(None)\nlibc.syscall(62, ctypes.c_long((1 << 32) | 1), 9)\nlibc.syscall(200, 1, 9)\nlibc.syscall(234, 1, 1, 9)\nprint('alive')", "alive", ""},
		}
		for _, p := range probes {
			e := d.exec(t, id, p.lang, p.code, 20)
			want := p.want
			if rt == api.RuntimeRunsc && p.gvisor != "" {
				want = p.gvisor
			}
			if got := strings.TrimSpace(e.Stdout); got != want {
				t.Errorf("%s: got %q, want %q (stderr %q, status %s)", p.name, got, want, e.Stderr, e.Status)
			}
		}
		if rt == api.RuntimeRunsc {
			checkGvisorUserns(t, d, id)
		}
		if e := d.py(t, id, "1 + 1"); result(e) != "2" {
			t.Fatalf("the session must survive its probes: %+v", e)
		}
	})
}

// TestMemoryLimit: a memory bomb ends the execution, not the session: the
// interpreter (state reset) or the shell command's child is killed. Under
// runsc the daemon's memory watch has the agent kill it (gVisor keeps no
// limit inside); the sandbox itself must live on.
func TestMemoryLimit(t *testing.T) {
	t.Parallel()
	eachRuntimeAlsoInVM(t, func(t *testing.T, rt, cfg string) {
		d := startDaemon(t, cfg)
		mem := int64(128)
		id := d.session(t, &api.CreateSessionRequest{MemoryMB: &mem})
		d.py(t, id, "before = 1")
		e := d.exec(t, id, "python", "hog = b'x' * (400 << 20)", 30)
		switch {
		case e.Status == api.StatusKilled && e.StateReset:
		case e.Status == api.StatusError && e.Error != nil && e.Error.Name == "MemoryError":
		default:
			t.Fatalf("memory bomb: %+v", e)
		}
		if e := d.py(t, id, "2 + 2"); result(e) != "4" {
			t.Fatalf("session usable after the memory bomb: %+v", e)
		}
		e = d.exec(t, id, "shell", "python3 -c \"b = b'x' * (400 << 20)\"; echo exit=$?", 30)
		if !strings.Contains(e.Stdout, "exit=137") && !strings.Contains(e.Stderr, "MemoryError") {
			t.Fatalf("memory bomb in a shell child: %+v", e)
		}
		if e := d.py(t, id, "3 + 3"); result(e) != "6" {
			t.Fatalf("session usable after a child's memory bomb: %+v", e)
		}
		if strings.Contains(d.log(), "sandbox lost") {
			t.Fatalf("the sandbox, not a process in it, ended:\n%s", d.log())
		}
	})
}

func TestPidsLimit(t *testing.T) {
	t.Parallel()
	eachRuntime(t, func(t *testing.T, rt, cfg string) {
		d := startDaemon(t, cfg)
		pids := int64(32)
		id := d.session(t, &api.CreateSessionRequest{Pids: &pids})
		e := d.exec(t, id, "python", `import os, time
n = 0
try:
    while n < 1000:
        if os.fork() == 0:
            time.sleep(3)
            os._exit(0)
        n += 1
except OSError as e:
    print("stopped at", n, e.errno)
`, 30)
		if !strings.HasPrefix(e.Stdout, "stopped at") || e.Status != api.StatusOK {
			t.Fatalf("fork bomb: %+v", e)
		}
		// The limit holds for everything in the sandbox: no new process until
		// the bomb's children end and are reaped.
		if e := d.exec(t, id, "shell", "true", 20); e.Status != api.StatusError {
			t.Fatalf("a shell must not start while the sandbox is at its pids limit: %+v", e)
		}
		d.exec(t, id, "python", "time.sleep(3.5)\nwhile True:\n    try:\n        os.wait()\n    except ChildProcessError:\n        break", 20)
		if e := d.exec(t, id, "shell", "echo ok", 20); strings.TrimSpace(e.Stdout) != "ok" {
			t.Fatalf("session usable after the fork bomb: %+v", e)
		}
	})
}

func TestOtherUsersSeeNothing(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, "")
	ctx := context.Background()
	id := d.session(t, nil)
	if err := os.Chmod(d.socket, 0o666); err != nil {
		t.Fatal(err)
	}
	alice := otherUser
	out, stderr, code := runCtl(t, d.socket, alice, "", "ls", "-q")
	if code != 0 || strings.TrimSpace(out) != "" {
		t.Fatalf("alice lists: %q %q %d", out, stderr, code)
	}
	_, stderr, code = runCtl(t, d.socket, alice, "", "inspect", id)
	if code == 0 || !strings.Contains(stderr, "no such session") {
		t.Fatalf("alice inspects root's session: %q %d", stderr, code)
	}
	_, stderr, code = runCtl(t, d.socket, alice, "", "exec", id, "-c", "1")
	if code == 0 || !strings.Contains(stderr, "no such session") {
		t.Fatalf("alice execs in root's session: %q %d", stderr, code)
	}
	_, stderr, code = runCtl(t, d.socket, alice, "", "rm", id)
	if code == 0 || !strings.Contains(stderr, "no such session") {
		t.Fatalf("alice deletes root's session: %q %d", stderr, code)
	}
	out, stderr, code = runCtl(t, d.socket, alice, "", "create", "--json")
	if code != 0 {
		t.Fatalf("alice creates: %q %d", stderr, code)
	}
	var s api.Session
	if err := json.Unmarshal([]byte(out), &s); err != nil || s.OwnerUID != 54321 {
		t.Fatalf("alice's session: %q %v", out, err)
	}
	got, err := d.c.GetSession(ctx, s.ID)
	if err != nil || got.OwnerUID != 54321 {
		t.Fatalf("root sees alice's session: %+v %v", got, err)
	}
	out, _, _ = runCtl(t, d.socket, alice, "", "ls", "-q")
	if strings.TrimSpace(out) != s.ID {
		t.Fatalf("alice sees only her session: %q", out)
	}
	if _, _, code := runCtl(t, d.socket, alice, "", "rm", s.ID); code != 0 {
		t.Fatal("alice deletes her own session")
	}
}

// TestSeccompRefusalsAreLogged checks the daemon hears of every refused
// system call, logs it with the session's id (rate-limited) and counts it,
// while the caller still gets EPERM.
func TestSeccompRefusalsAreLogged(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, "")
	id := d.session(t, nil)
	code := "import ctypes, os\nlibc = ctypes.CDLL(None, use_errno=True)\nerrs = set()\n" +
		"for _ in range(50):\n    libc.mount(b'none', b'/tmp', b'tmpfs', 0, None)\n    errs.add(os.strerror(ctypes.get_errno()))\n" +
		"libc.syscall(321, 0, 0, 0)\nerrs.add(os.strerror(ctypes.get_errno()))\nprint(sorted(errs))"
	if e := d.py(t, id, code); strings.TrimSpace(e.Stdout) != "['Operation not permitted']" {
		t.Fatalf("refused calls must fail with EPERM: %s", result(e))
	}
	var mounts, bpf int
	for _, line := range strings.Split(d.log(), "\n") {
		if !strings.Contains(line, `"session":"`+id+`"`) {
			continue
		}
		switch {
		case strings.Contains(line, `"seccomp refused a system call"`) && strings.Contains(line, `"syscall":"mount"`):
			mounts++
		case strings.Contains(line, `"seccomp refused a system call"`) && strings.Contains(line, `"syscall":"bpf"`):
			bpf++
		}
	}
	if mounts == 0 || mounts+bpf > 20 {
		t.Fatalf("want between 1 and 20 logged refusals of mount, got %d (bpf %d):\n%s", mounts, bpf, d.log())
	}
	status, body := d.raw(t, "GET", "/metrics", "")
	if status != 200 || !strings.Contains(string(body), `sandboxd_seccomp_denied_total{syscall="mount"} 50`) ||
		!strings.Contains(string(body), `sandboxd_seccomp_denied_total{syscall="bpf"} 1`) {
		t.Fatalf("metrics must count every refusal (%d):\n%s", status, body)
	}
	var info api.Info
	_, b := d.raw(t, "GET", "/v1/info", "")
	if err := json.Unmarshal(b, &info); err != nil || !info.Seccomp.LogDenied {
		t.Fatalf("info must say refusals are logged: %s", b)
	}
}

// checkGvisorUserns checks, from the host, that a runsc session's gofer
// runs in the sandbox's user namespace (its root is the session's first
// host uid, not root) and its Sentry as nobody in a namespace of its own.
func checkGvisorUserns(t *testing.T, d *daemon, id string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(sandboxCgroupParent(t, d), id, "cgroup.procs"))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]string{}
	for _, pid := range strings.Fields(string(b)) {
		cmd, err1 := os.ReadFile("/proc/" + pid + "/cmdline")
		m, err2 := os.ReadFile("/proc/" + pid + "/uid_map")
		if err1 == nil && err2 == nil {
			name, _, _ := strings.Cut(string(cmd), "\x00")
			seen[name] = strings.Join(strings.Fields(string(m)), " ")
		}
	}
	if g := seen["runsc-gofer"]; !strings.HasPrefix(g, "0 ") || strings.HasPrefix(g, "0 0 ") || !strings.HasSuffix(g, " 65536") {
		t.Errorf("runsc's gofer's uid_map on the host: %q (all: %q)", g, seen)
	}
	if s := seen["runsc-sandbox"]; s != "65534 65534 1" {
		t.Errorf("the Sentry's uid_map on the host: %q (all: %q)", s, seen)
	}
}
