package integration

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/sandboxd/sandboxd/api"
)

// What a sandbox may learn of the host it runs on: which kernel interfaces
// it can open sockets to, the kernel's command line, and the host's folder
// names through its mount table.

// sandboxSocket is one socket(2) or socketpair(2) call made from Python in
// a sandbox.
type sandboxSocket struct {
	Name               string
	Pair               bool
	Family, Type, Prot int
	allowed            bool
}

// hostErrno is what the call does on the host, outside any sandbox.
func (s sandboxSocket) hostErrno() unix.Errno {
	if s.Pair {
		fds, err := unix.Socketpair(s.Family, s.Type, s.Prot)
		if err != nil {
			return err.(unix.Errno)
		}
		unix.Close(fds[0])
		unix.Close(fds[1])
		return 0
	}
	fd, err := unix.Socket(s.Family, s.Type, s.Prot)
	if err != nil {
		return err.(unix.Errno)
	}
	unix.Close(fd)
	return 0
}

// TestSandboxSocketFamilies opens sockets family by family inside a
// sandbox: the families it needs work as on the host, every other one
// fails with EAFNOSUPPORT (as on a kernel without it) — AF_VSOCK above all,
// which on a VM host reaches the hypervisor.
func TestSandboxSocketFamilies(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, "")
	id := d.session(t, nil)
	calls := []sandboxSocket{
		{"AF_UNIX stream", false, unix.AF_UNIX, unix.SOCK_STREAM, 0, true},
		{"AF_UNIX datagram, non-blocking", false, unix.AF_UNIX, unix.SOCK_DGRAM | unix.SOCK_NONBLOCK, 0, true},
		{"AF_INET stream", false, unix.AF_INET, unix.SOCK_STREAM, 0, true},
		{"AF_INET datagram, close-on-exec", false, unix.AF_INET, unix.SOCK_DGRAM | unix.SOCK_CLOEXEC, unix.IPPROTO_UDP, true},
		{"AF_INET6 stream", false, unix.AF_INET6, unix.SOCK_STREAM, 0, true},
		{"AF_INET6 datagram, non-blocking", false, unix.AF_INET6, unix.SOCK_DGRAM | unix.SOCK_NONBLOCK, 0, true},
		{"AF_NETLINK route", false, unix.AF_NETLINK, unix.SOCK_RAW | unix.SOCK_CLOEXEC, unix.NETLINK_ROUTE, true},
		{"socketpair AF_UNIX", true, unix.AF_UNIX, unix.SOCK_STREAM, 0, true},
		{"socketpair AF_UNIX datagram", true, unix.AF_UNIX, unix.SOCK_DGRAM, 0, true},

		{"AF_VSOCK stream", false, unix.AF_VSOCK, unix.SOCK_STREAM, 0, false},
		{"AF_VSOCK datagram", false, unix.AF_VSOCK, unix.SOCK_DGRAM, 0, false},
		{"AF_PACKET", false, unix.AF_PACKET, unix.SOCK_RAW, 0x0300, false},
		{"AF_PACKET datagram", false, unix.AF_PACKET, unix.SOCK_DGRAM, 0, false},
		{"AF_NETLINK audit", false, unix.AF_NETLINK, unix.SOCK_RAW, unix.NETLINK_AUDIT, false},
		{"AF_NETLINK uevent", false, unix.AF_NETLINK, unix.SOCK_DGRAM, unix.NETLINK_KOBJECT_UEVENT, false},
		{"AF_NETLINK sock_diag", false, unix.AF_NETLINK, unix.SOCK_RAW, unix.NETLINK_SOCK_DIAG, false},
		{"AF_NETLINK generic", false, unix.AF_NETLINK, unix.SOCK_RAW, unix.NETLINK_GENERIC, false},
		{"AF_BLUETOOTH", false, unix.AF_BLUETOOTH, unix.SOCK_RAW, 1, false},
		{"AF_ALG", false, unix.AF_ALG, unix.SOCK_SEQPACKET, 0, false},
		{"AF_KEY", false, unix.AF_KEY, unix.SOCK_RAW, 2, false},
		{"AF_XDP", false, unix.AF_XDP, unix.SOCK_RAW, 0, false},
		{"AF_TIPC", false, unix.AF_TIPC, unix.SOCK_RDM, 0, false},
		{"AF_CAN", false, unix.AF_CAN, unix.SOCK_RAW, 1, false},
		{"AF_RDS", false, unix.AF_RDS, unix.SOCK_SEQPACKET, 0, false},
		{"socketpair AF_INET", true, unix.AF_INET, unix.SOCK_STREAM, 0, false},
		{"socketpair AF_TIPC", true, unix.AF_TIPC, unix.SOCK_SEQPACKET, 0, false},
	}
	probe, err := json.Marshal(calls)
	if err != nil {
		t.Fatal(err)
	}
	code := fmt.Sprintf(`import json, socket
out = {}
for c in json.loads(%q):
    try:
        if c['Pair']:
            a, b = socket.socketpair(c['Family'], c['Type'], c['Prot'])
            a.close(); b.close()
        else:
            socket.socket(c['Family'], c['Type'], c['Prot']).close()
        out[c['Name']] = 0
    except OSError as e:
        out[c['Name']] = e.errno
print(json.dumps(out))`, probe)
	e := d.py(t, id, code)
	var got map[string]unix.Errno
	if err := json.Unmarshal([]byte(e.Stdout), &got); err != nil {
		t.Fatalf("probe: %v: %s", err, describe(e))
	}
	for _, c := range calls {
		errno, ok := got[c.Name]
		switch {
		case !ok:
			t.Errorf("%s: not probed", c.Name)
		case c.allowed:
			if want := c.hostErrno(); errno != want {
				t.Errorf("%s: errno %d (%v) in the sandbox, %d on the host", c.Name, errno, errno, want)
			}
		case errno != unix.EAFNOSUPPORT:
			t.Errorf("%s: errno %d (%v), want EAFNOSUPPORT", c.Name, errno, errno)
		}
	}

	// What programs do with sockets, unchanged.
	for _, p := range []struct{ name, lang, code, want string }{
		{"socket() and socketpair() with their defaults", "python",
			"import socket\ns = socket.socket()\na, b = socket.socketpair()\na.sendall(b'x')\nprint(s.family.name, a.family.name, b.recv(1).decode())",
			"AF_INET AF_UNIX x"},
		{"a TCP server and client on lo", "python",
			"import socket\nsrv = socket.create_server(('127.0.0.1', 0))\nc = socket.create_connection(srv.getsockname())\nconn, _ = srv.accept()\nc.sendall(b'ping')\nprint(conn.recv(4).decode())",
			"ping"},
		{"IPv6 on lo", "python",
			"import socket\nsrv = socket.create_server(('::1', 0), family=socket.AF_INET6)\nc = socket.create_connection(srv.getsockname()[:2])\nprint('ok')",
			"ok"},
		{"asyncio (its self-pipe is a socketpair)", "python",
			"import asyncio\nasync def main():\n    srv = await asyncio.start_server(lambda r, w: w.write(b'hi'), '127.0.0.1', 0)\n    r, w = await asyncio.open_connection(*srv.sockets[0].getsockname())\n    print((await r.read(2)).decode())\n    w.close(); srv.close()\nasyncio.run(main())",
			"hi"},
		{"interfaces over netlink route", "python", "import socket\nprint(socket.if_nameindex())", "[(1, 'lo')]"},
		{"getaddrinfo with AI_ADDRCONFIG (netlink route)", "python",
			"import socket\nprint(sorted({a[4][0] for a in socket.getaddrinfo('localhost', 80, flags=socket.AI_ADDRCONFIG)})[0])",
			"127.0.0.1"},
		{"ip addr", "shell", "ip -o -4 addr show dev lo | awk '{print $4}'", "127.0.0.1/8"},
		{"ip link", "shell", "ip -o link show | awk -F': ' '{print $2}'", "lo"},
		{"ip route", "shell", "ip route get 127.0.0.1 | awk 'NR == 1 {print $1, $2, $3, $4}'", "local 127.0.0.1 dev lo"},
		{"AF_VSOCK from Python", "python",
			"import socket\ntry:\n    socket.socket(socket.AF_VSOCK, socket.SOCK_STREAM)\n    print('opened')\nexcept OSError as e:\n    print(e.strerror)",
			"Address family not supported by protocol"},
	} {
		e := d.exec(t, id, p.lang, p.code, 20)
		if got := strings.TrimSpace(e.Stdout); got != p.want {
			t.Errorf("%s: got %q, want %q (%s)", p.name, got, p.want, describe(e))
		}
	}
}

// TestSandboxHidesKernelCmdline reads /proc/cmdline inside a sandbox: the
// host's kernel command line (boot parameters, on a VM its hypervisor's
// settings) must not show.
func TestSandboxHidesKernelCmdline(t *testing.T) {
	t.Parallel()
	host, err := os.ReadFile("/proc/cmdline")
	if err != nil {
		t.Fatal(err)
	}
	if len(strings.TrimSpace(string(host))) == 0 {
		t.Fatal("the host's /proc/cmdline is empty: the test cannot tell")
	}
	d := startDaemon(t, "")
	id := d.session(t, nil)
	e := d.sh(t, id, "wc -c < /proc/cmdline; cat /proc/cmdline")
	if e.Status != api.StatusOK || strings.TrimSpace(e.Stdout) != "0" {
		t.Fatalf("/proc/cmdline in a sandbox: %s", describe(e))
	}
	for _, word := range strings.Fields(string(host)) {
		if len(word) > 4 && strings.Contains(e.Stdout, word) {
			t.Errorf("the sandbox sees %q of the host's command line", word)
		}
	}
}

// TestSandboxMountinfoHidesHostPaths reads the mount table inside sandboxes
// of the python template and of an imported one: no host folder name of
// the daemon shows (data dir, run dir, its state folder, instance id), nor
// the session's id; and no mount the daemon made for the start is left on
// the host. With disk_quota = "none" /workspace and /tmp are folders of
// the data dir bound as they are, and their lines alone show the path.
func TestSandboxMountinfoHidesHostPaths(t *testing.T) {
	t.Parallel()
	// Python, not cat: an imported image has no coreutils.
	const show = "for f in ('/proc/self/mountinfo', '/proc/self/mounts', '/proc/self/mountstats', '/proc/1/mountinfo'):\n    print(open(f).read())"
	check := func(t *testing.T, d *daemon, id string, residue ...string) {
		t.Helper()
		e := d.py(t, id, show)
		if e.Status != api.StatusOK || !strings.Contains(e.Stdout, " /workspace ") {
			t.Fatalf("mount table: %s", describe(e))
		}
		forbidden := []string{d.base, filepath.Base(d.base), d.runDir, filepath.Join(d.base, "data"), d.stateDir(),
			d.instance(), id, "sandboxd"}
		for _, line := range strings.Split(e.Stdout, "\n") {
			var seen []string
			for _, f := range forbidden {
				if strings.Contains(line, f) {
					seen = append(seen, f)
				}
			}
			if len(seen) > 0 && !allowedResidue(line, residue) {
				t.Errorf("the sandbox sees %q: %s", seen, line)
			}
		}
		if m := sandboxMounts(t, d.stateDir()); len(m) != 0 {
			t.Errorf("mounts of the start left on the host: %+v", m[0])
		}
	}

	t.Run("python template", func(t *testing.T) {
		d := startDaemon(t, "")
		id := d.session(t, nil)
		check(t, d, id)
		// Everything still works over the neutral mounts.
		e := d.sh(t, id, "python3 -c 'import ssl, json; print(1)' && test -s /etc/ssl/certs/ca-certificates.crt && grep -c sandbox /etc/passwd && touch /workspace/w /tmp/t && echo ok")
		if strings.TrimSpace(e.Stdout) != "1\n1\nok" {
			t.Fatalf("the sandbox over its mounts: %s", describe(e))
		}
		if e := d.sh(t, id, "touch /etc/x /usr/x 2>&1 | grep -c Read-only"); strings.TrimSpace(e.Stdout) != "2" {
			t.Fatalf("/etc and /usr must stay read-only: %s", describe(e))
		}
		// A restart makes the same mounts again.
		if _, err := d.c.RestartSession(t.Context(), id); err != nil {
			t.Fatal(err)
		}
		check(t, d, id)
	})

	t.Run("imported template", func(t *testing.T) {
		notInVM(t) // the import's root filesystem is mounted as the python template's is
		d := startDaemon(t, "")
		tarball := rootfsTarball(t)
		if _, stderr, code := d.ctl(t, "", "template", "import", "hv", tarball); code != 0 {
			t.Fatalf("import: %s", stderr)
		}
		id := d.session(t, &api.CreateSessionRequest{Template: "hv"})
		check(t, d, id)
		e := d.py(t, id, "print(open('/etc/os-release').read().strip(), open('/usr/local/bin/python3', 'rb').read(4))")
		if strings.TrimSpace(e.Stdout) != `ID=sandboxd-test-image b'\x7fELF'` {
			t.Fatalf("inside the image: %s", describe(e))
		}
		if e := d.py(t, id, "open('/usr/local/bin/new', 'w')"); e.Status != api.StatusError || !strings.Contains(e.Stderr, "Read-only") {
			t.Fatalf("the image is read-only: %s", describe(e))
		}
	})

	t.Run("disk quotas off", func(t *testing.T) {
		notInVM(t)
		d := startDaemon(t, "disk_quota = \"none\"\n")
		id := d.session(t, nil)
		check(t, d, id, "/workspace", "/tmp")
	})
}

// allowedResidue reports whether a mount table line is that of one of the
// given mount points.
func allowedResidue(line string, mountpoints []string) bool {
	f := strings.Fields(line)
	for _, mp := range mountpoints {
		switch {
		case len(f) > 4 && f[4] == mp: // mountinfo
		case len(f) > 1 && f[1] == mp: // mounts
		case strings.Contains(line, " mounted on "+mp+" "): // mountstats
		default:
			continue
		}
		return true
	}
	return false
}
