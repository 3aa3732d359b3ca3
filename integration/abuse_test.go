package integration

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"github.com/sandboxd/sandboxd/api"
)

// sc is Python that makes a raw system call and prints "blocked" when the
// kernel refuses it with EPERM or EACCES (seccomp or a missing capability),
// "ESCAPED" and the errno otherwise. Arguments are NULL/0: a permitted call
// would fail with EFAULT or EINVAL instead, so only a real refusal passes.
func sc(nr int, args ...string) string {
	return fmt.Sprintf(`import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
r = libc.syscall(%d%s)
e = ctypes.get_errno()
print('blocked' if r == -1 and e in (1, 13) else 'ESCAPED errno=%%d r=%%d' %% (e, r))`, nr, joinArgs(args))
}

func joinArgs(args []string) string {
	if len(args) == 0 {
		return ""
	}
	return ", " + strings.Join(args, ", ")
}

// pyRefused is Python that runs stmt and prints "blocked" when it raises
// one of the given exception types.
func pyRefused(stmt string, excs ...string) string {
	if len(excs) == 0 {
		excs = []string{"PermissionError"}
	}
	return fmt.Sprintf("import os, socket\ntry:\n    %s\n    print('ESCAPED')\nexcept (%s,) as e:\n    print('blocked')", stmt, strings.Join(excs, ", "))
}

// cgroupAttacks are the attacks whose defence is a cgroup's (its limits,
// its namespace, its filesystem): the VM, on cgroup v2, runs these (and
// the battery's checks after them), the host all.
var cgroupAttacks = map[string]bool{
	"learn the host cgroup path": true,
	"reach /sys/fs/cgroup":       true,
	"fork bomb":                  true,
	"memory bomb":                true,
	"disk fill":                  true,
}

// TestAbuseBattery runs attacks inside a sandbox, for each runtime. Each
// must print "blocked"; afterwards the host must be as it was.
func TestAbuseBattery(t *testing.T) {
	t.Parallel()
	eachRuntime(t, func(t *testing.T, rt, cfg string) { abuseBattery(t, cfg) })
}

func abuseBattery(t *testing.T, cfg string) {
	// A 64 KiB output cap: 2 s of yes must overflow it on any host (the
	// emulated VM at 0.5 CPUs once wrote exactly the default 1 MiB).
	const outputCap = 64 << 10
	d := startDaemon(t, cfg+fmt.Sprintf("max_output_bytes = %d\n", outputCap))
	victim := d.session(t, nil)
	d.sh(t, victim, "echo other-session-secret > victim-secret-file.txt")
	// pids 64: under gVisor each forked Python costs ~2 MiB of the host's
	// memory, so at the default 256 the fork bomb meets the memory limit
	// (its children killed, its forks going on) before the pids limit.
	cpus, disk := 0.5, int64(64)
	id := d.session(t, &api.CreateSessionRequest{CPUs: &cpus, DiskMB: &disk, Pids: ptr(int64(64))})

	// Host state the attacks aim at.
	marker := "/root/sandboxd-abuse-marker"
	if err := os.WriteFile(marker, []byte("untouched"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(marker) })
	hostname, _ := os.ReadFile("/proc/sys/kernel/hostname")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	accepted := make(chan struct{}, 1)
	go func() {
		if c, err := ln.Accept(); err == nil {
			accepted <- struct{}{}
			c.Close()
		}
	}()
	abstract := fmt.Sprintf("@sandboxd-abuse-%d", os.Getpid())
	uln, err := net.Listen("unix", abstract)
	if err != nil {
		t.Fatal(err)
	}
	defer uln.Close()
	sleeper := exec.Command("sleep", "300")
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { sleeper.Process.Kill(); sleeper.Wait() }()

	attacks := []struct{ name, lang, code string }{
		// Host secrets and other sessions.
		{"read /etc/shadow", "shell", "cat /etc/shadow >/dev/null 2>&1 && echo ESCAPED || echo blocked"},
		{"read the host's root home", "shell", "cat " + marker + " >/dev/null 2>&1 && echo ESCAPED || echo blocked"},
		{"find another session's files", "shell", "find / \\( -path /proc -o -path /sys -o -path /usr \\) -prune -o -name victim-secret-file.txt -print 2>/dev/null | grep -q . && echo ESCAPED || echo blocked"},
		{"read host processes' environment", "python", "import os\npids = [p for p in os.listdir('/proc') if p.isdigit()]\nprint('ESCAPED' if len(pids) > 10 else 'blocked')"},
		{"learn the host cgroup path", "shell", "grep -q sandbox /proc/self/cgroup && echo ESCAPED || echo blocked"},
		// Writing outside /workspace and /tmp.
		{"write /usr", "shell", "echo x > /usr/bin/evil 2>/dev/null && echo ESCAPED || echo blocked"},
		{"write /etc/passwd", "shell", "echo 'x::0:0::/:/bin/sh' >> /etc/passwd 2>/dev/null && echo ESCAPED || echo blocked"},
		{"write /", "shell", "mkdir /evil 2>/dev/null && echo ESCAPED || echo blocked"},
		{"overwrite /proc/self/exe", "python", pyRefused("open('/proc/self/exe', 'wb')", "PermissionError", "OSError")},
		{"write /proc/sys", "shell", "echo evil > /proc/sys/kernel/hostname 2>/dev/null && echo ESCAPED || echo blocked"},
		{"write /proc/sysrq-trigger", "shell", "echo h > /proc/sysrq-trigger 2>/dev/null && echo ESCAPED || echo blocked"},
		{"write /sys", "shell", "echo 1 > /sys/kernel/profiling 2>/dev/null && echo ESCAPED || echo blocked"},
		{"reach /sys/fs/cgroup", "shell", "ls /sys/fs/cgroup/memory >/dev/null 2>&1 && echo ESCAPED || echo blocked"},
		{"hard-link a system file into /workspace", "shell", "ln /usr/bin/python3 /workspace/py 2>/dev/null && echo ESCAPED || echo blocked"},
		// Mounts and namespaces.
		{"mount tmpfs", "python", sc(165, `b"none"`, `b"/tmp"`, `b"tmpfs"`, "0", "0")},
		{"mount cgroup for release_agent", "python", sc(165, `b"cgroup"`, `b"/tmp"`, `b"cgroup"`, "0", `b"rdma"`)},
		{"umount /proc", "python", sc(166, `b"/proc"`, "2")},
		{"unshare user namespace", "python", sc(272, "0x10000000")},
		{"unshare mount namespace", "python", sc(272, "0x00020000")},
		{"setns", "python", "import ctypes, os\nlibc = ctypes.CDLL(None, use_errno=True)\nfd = os.open('/proc/self/ns/net', os.O_RDONLY)\nr = libc.setns(fd, 0)\nprint('blocked' if r == -1 and ctypes.get_errno() in (1, 13) else 'ESCAPED')"},
		{"pivot_root", "python", sc(155, `b"/tmp"`, `b"/tmp"`)},
		{"chroot", "python", sc(161, `b"/tmp"`)},
		{"unshare command", "shell", "unshare -Urm true 2>/dev/null && echo ESCAPED || echo blocked"},
		// Kernel interfaces.
		{"keyctl", "python", sc(250, "0")},
		{"add_key", "python", sc(248, "0", "0", "0", "0", "0")},
		{"bpf", "python", sc(321, "0", "0", "0")},
		{"perf_event_open", "python", sc(298, "0", "0", "-1", "-1", "0")},
		{"userfaultfd", "python", sc(323, "0")},
		{"ptrace the agent", "python", sc(101, "16", "1", "0", "0")},
		{"process_vm_readv of the agent", "python", sc(310, "1", "0", "0", "0", "0", "0")},
		{"init_module", "python", sc(175, "0", "0", `b""`)},
		{"finit_module", "python", sc(313, "0", `b""`, "0")},
		{"kexec_load", "python", sc(246, "0", "0", "0", "0")},
		{"open_by_handle_at", "python", sc(304, "0", "0", "0")},
		{"sethostname", "python", sc(170, `b"evil"`, "4")},
		{"settimeofday", "python", sc(164, "0", "0")},
		{"reboot", "python", sc(169, "0xfee1dead", "672274793", "0x1234567")},
		{"swapon", "python", sc(167, `b"/tmp/x"`, "0")},
		{"acct", "python", sc(163, `b"/tmp/x"`)},
		{"iopl", "python", sc(172, "3")},
		{"personality READ_IMPLIES_EXEC", "python", sc(135, "0x0400000")},
		// Devices.
		{"mknod /dev/mem", "shell", "mknod /tmp/mem c 1 1 2>/dev/null && echo ESCAPED || echo blocked"},
		{"read /dev/mem", "shell", "head -c1 /dev/mem >/dev/null 2>&1 && echo ESCAPED || echo blocked"},
		{"read /dev/kmsg", "shell", "head -c1 /dev/kmsg >/dev/null 2>&1 && echo ESCAPED || echo blocked"},
		{"see host disks", "shell", "ls /dev | grep -Eq '^(sd|vd|nvme|xvd)' && echo ESCAPED || echo blocked"},
		// Network.
		{"raw socket", "python", pyRefused("socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)")},
		// Address families a sandbox does not need fail as on a kernel
		// without them (EAFNOSUPPORT, an OSError), before any capability
		// check could say EPERM.
		{"packet socket", "python", pyRefused("socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)", "PermissionError", "OSError")},
		{"vsock socket (the hypervisor)", "python", pyRefused("socket.socket(socket.AF_VSOCK, socket.SOCK_STREAM, 0)", "PermissionError", "OSError")},
		{"netlink audit socket", "python", pyRefused("socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 9)", "PermissionError", "OSError")},
		{"any device but lo", "shell", "ls /sys/class/net | grep -vq '^lo$' && echo ESCAPED || echo blocked"},
		{"any route out", "shell", "[ $(wc -l < /proc/net/route) -gt 1 ] && echo ESCAPED || echo blocked"},
		{"the host's loopback", "python", pyRefused(fmt.Sprintf("socket.create_connection(('127.0.0.1', %d), timeout=2)", port), "OSError")},
		{"the host's abstract socket", "python", pyRefused(fmt.Sprintf("s = socket.socket(socket.AF_UNIX); s.connect('\\0%s')", strings.TrimPrefix(abstract, "@")), "OSError")},
		// Processes outside.
		{"kill a host process", "python", pyRefused(fmt.Sprintf("os.kill(%d, 9)", sleeper.Process.Pid), "ProcessLookupError", "PermissionError")},
		{"kill the agent", "python", "import os\ntry:\n    os.kill(1, 9)\nexcept OSError:\n    pass\nprint('blocked')"},
		{"kill every process", "python", "import os\ntry:\n    os.kill(-1, 9)\nexcept OSError:\n    pass\nprint('blocked')"},
		// Identity: root, the agent, the user namespace.
		{"become root", "python", pyRefused("os.setuid(0)")},
		// gVisor lets code read the agent's environment (it does not apply
		// the agent's non-dumpable flag there): it must hold nothing the
		// code does not have.
		{"read the agent's environment", "python", `import os
try:
    env = open('/proc/1/environ', 'rb').read().split(b'\0')
except OSError:
    print('blocked')
else:
    mine = {k.encode() + b'=' + v.encode() for k, v in os.environ.items()}
    extra = [e.split(b'=')[0] for e in env if e and e not in mine]
    print('ESCAPED %r' % extra if extra else 'blocked')`},
		{"read the agent's memory", "python", pyRefused("open('/proc/1/mem', 'rb').read(1)", "PermissionError", "OSError")},
		{"rewrite the uid map", "shell", "echo '0 0 1' > /proc/self/uid_map 2>/dev/null && echo ESCAPED || echo blocked"},
		{"io_uring_setup", "python", sc(425, "1", "0")},
		// Exhaustion.
		{"fork bomb", "python", `import os, time
kids = []
try:
    for _ in range(100000):
        pid = os.fork()
        if pid == 0:
            time.sleep(60)
            os._exit(0)
        kids.append(pid)
    print('ESCAPED')
except OSError:
    print('blocked')
for k in kids:
    os.kill(k, 9)
    os.waitpid(k, 0)`},
		{"memory bomb", "shell", "python3 -c 'b = b\"x\" * (2 << 30)' 2>/dev/null && echo ESCAPED || echo blocked"},
		{"disk fill", "shell", "head -c 200000000 /dev/zero > /workspace/fill 2>/dev/null && echo ESCAPED || echo blocked; rm -f /workspace/fill"},
		{"file descriptor exhaustion", "python", "import os\nfds = []\ntry:\n    while len(fds) < 100000:\n        fds.append(os.open('/dev/null', os.O_RDONLY))\n    print('ESCAPED')\nexcept OSError:\n    print('blocked')\nfor f in fds: os.close(f)"},
		{"huge argv", "python", pyRefused("os.execv('/bin/true', ['true', 'x' * (64 << 20)])", "OSError")},
		{"huge environment", "python", pyRefused("os.execve('/bin/true', ['true'], {'X': 'x' * (64 << 20)})", "OSError")},
	}
	if len(attacks) < 50 {
		t.Fatalf("the battery has %d attacks, fewer than 40", len(attacks))
	}
	named := map[string]bool{}
	for _, a := range attacks {
		named[a.name] = true
	}
	for name := range cgroupAttacks {
		if !named[name] {
			t.Fatalf("cgroupAttacks names %q, which the battery has not", name)
		}
	}
	for _, a := range attacks {
		if testing.Short() && !cgroupAttacks[a.name] {
			continue // the same under either cgroup version: the host checks it
		}
		e := d.exec(t, id, a.lang, a.code, 30)
		if got := strings.TrimSpace(e.Stdout); got != "blocked" {
			t.Errorf("%s: %q (stderr %q, status %s)", a.name, got, e.Stderr, e.Status)
		} else {
			t.Logf("%-40s blocked", a.name)
		}
	}

	// CPU beyond the quota: two processes busy for 2 s at 0.5 CPUs. Measured
	// from the host (the cgroup's usage): gVisor's own rusage counts the
	// time its tasks ran, not what the host's quota let the Sentry have.
	before, err := d.c.Stats(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	d.exec(t, id, "python", `import os, time
kids = []
for _ in range(2):
    pid = os.fork()
    if pid == 0:
        end = time.time() + 2
        while time.time() < end:
            pass
        os._exit(0)
    kids.append(pid)
for k in kids:
    os.waitpid(k, 0)`, 30)
	after, err := d.c.Stats(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if used := after.CPUSeconds - before.CPUSeconds; used > 1.5 {
		t.Errorf("CPU beyond the quota: %.2f CPU seconds in 2 s at 0.5 CPUs", used)
	} else {
		t.Logf("%-40s blocked (%.2f CPU seconds)", "CPU beyond the quota", used)
	}

	// A process that leaves its execution's group and tree (setsid, a
	// double fork) does not outlive the timeout.
	if e := d.exec(t, id, "shell", "setsid sleep 1011 & (sleep 1012 &); sleep 100", 2); e.Status != "timeout" {
		t.Errorf("setsid: %+v", e)
	} else if ps := d.procs(t, id); running(ps, "sleep 1011") || running(ps, "sleep 1012") {
		t.Errorf("setsid and double-forked processes outlived their execution's timeout: %v", ps)
	}

	// Infinite output: capped, cut off by the timeout, daemon unharmed.
	if e := d.exec(t, id, "shell", "yes", 2); e.Status != "timeout" || !e.Truncated || len(e.Stdout) > outputCap {
		t.Errorf("infinite output: status %s, truncated %v, %d bytes", e.Status, e.Truncated, len(e.Stdout))
	} else {
		t.Logf("%-40s blocked", "infinite output")
	}

	if e := d.py(t, id, "'alive'"); result(e) != "'alive'" {
		t.Fatalf("the session must survive the battery: %+v", e)
	}
	if e := d.sh(t, victim, "cat victim-secret-file.txt"); e.Stdout != "other-session-secret\n" {
		t.Fatalf("the other session was touched: %+v", e)
	}
	if b, _ := os.ReadFile(marker); string(b) != "untouched" {
		t.Fatal("the host marker changed")
	}
	if b, _ := os.ReadFile("/proc/sys/kernel/hostname"); string(b) != string(hostname) {
		t.Fatal("the host's hostname changed")
	}
	if _, err := os.Stat("/usr/bin/evil"); err == nil {
		t.Fatal("a file appeared in the host's /usr/bin")
	}
	select {
	case <-accepted:
		t.Fatal("the sandbox reached a listener on the host's loopback")
	default:
	}
	if err := sleeper.Process.Signal(syscall.Signal(0)); err != nil {
		t.Fatal("a host process was killed from the sandbox")
	}
}
