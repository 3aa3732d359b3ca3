package seccomp

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"testing"
	"unsafe"

	lcseccomp "github.com/opencontainers/runc/libcontainer/seccomp"
	"github.com/opencontainers/runc/libcontainer/specconv"
	"github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
)

// sockCall is one socket(2) or socketpair(2) call, with the raw 64-bit
// arguments the filter sees.
type sockCall struct {
	pair               bool
	family, typ, proto uint64
}

// sockCalls are the calls the filter is checked with, family by family:
// allowed says whether the sandbox may make it; every other one must fail
// with EAFNOSUPPORT.
var sockCalls = []struct {
	name    string
	call    sockCall
	allowed bool
}{
	{"AF_UNIX stream", sockCall{false, unix.AF_UNIX, unix.SOCK_STREAM, 0}, true},
	{"AF_UNIX datagram, close-on-exec, non-blocking", sockCall{false, unix.AF_UNIX, unix.SOCK_DGRAM | unix.SOCK_CLOEXEC | unix.SOCK_NONBLOCK, 0}, true},
	{"AF_INET stream", sockCall{false, unix.AF_INET, unix.SOCK_STREAM, 0}, true},
	{"AF_INET datagram, close-on-exec", sockCall{false, unix.AF_INET, unix.SOCK_DGRAM | unix.SOCK_CLOEXEC, unix.IPPROTO_UDP}, true},
	{"AF_INET6 stream, non-blocking", sockCall{false, unix.AF_INET6, unix.SOCK_STREAM | unix.SOCK_NONBLOCK, unix.IPPROTO_TCP}, true},
	{"AF_INET6 datagram", sockCall{false, unix.AF_INET6, unix.SOCK_DGRAM, 0}, true},
	{"AF_NETLINK route (ip, getifaddrs)", sockCall{false, unix.AF_NETLINK, unix.SOCK_RAW | unix.SOCK_CLOEXEC, unix.NETLINK_ROUTE}, true},
	{"AF_NETLINK route, datagram", sockCall{false, unix.AF_NETLINK, unix.SOCK_DGRAM, unix.NETLINK_ROUTE}, true},
	{"socketpair AF_UNIX stream", sockCall{true, unix.AF_UNIX, unix.SOCK_STREAM, 0}, true},
	{"socketpair AF_UNIX seqpacket, close-on-exec", sockCall{true, unix.AF_UNIX, unix.SOCK_SEQPACKET | unix.SOCK_CLOEXEC, 0}, true},

	{"AF_UNSPEC", sockCall{false, unix.AF_UNSPEC, unix.SOCK_STREAM, 0}, false},
	{"AF_VSOCK (the hypervisor)", sockCall{false, unix.AF_VSOCK, unix.SOCK_STREAM, 0}, false},
	{"AF_VSOCK datagram", sockCall{false, unix.AF_VSOCK, unix.SOCK_DGRAM, 0}, false},
	{"AF_PACKET", sockCall{false, unix.AF_PACKET, unix.SOCK_RAW, 0x0300}, false},
	{"AF_PACKET datagram", sockCall{false, unix.AF_PACKET, unix.SOCK_DGRAM, 0}, false},
	{"AF_NETLINK audit", sockCall{false, unix.AF_NETLINK, unix.SOCK_RAW, unix.NETLINK_AUDIT}, false},
	{"AF_NETLINK uevent", sockCall{false, unix.AF_NETLINK, unix.SOCK_DGRAM | unix.SOCK_CLOEXEC, unix.NETLINK_KOBJECT_UEVENT}, false},
	{"AF_NETLINK sock_diag", sockCall{false, unix.AF_NETLINK, unix.SOCK_RAW, unix.NETLINK_SOCK_DIAG}, false},
	{"AF_NETLINK generic", sockCall{false, unix.AF_NETLINK, unix.SOCK_RAW, unix.NETLINK_GENERIC}, false},
	{"AF_NETLINK netfilter", sockCall{false, unix.AF_NETLINK, unix.SOCK_RAW, unix.NETLINK_NETFILTER}, false},
	{"AF_NETLINK xfrm", sockCall{false, unix.AF_NETLINK, unix.SOCK_RAW, unix.NETLINK_XFRM}, false},
	{"AF_NETLINK route with junk in the high bits", sockCall{false, unix.AF_NETLINK, unix.SOCK_RAW, 1 << 32}, false},
	{"AF_BLUETOOTH", sockCall{false, unix.AF_BLUETOOTH, unix.SOCK_RAW, 1}, false},
	{"AF_ALG", sockCall{false, unix.AF_ALG, unix.SOCK_SEQPACKET, 0}, false},
	{"AF_KEY", sockCall{false, unix.AF_KEY, unix.SOCK_RAW, 2}, false},
	{"AF_XDP", sockCall{false, unix.AF_XDP, unix.SOCK_RAW, 0}, false},
	{"AF_TIPC", sockCall{false, unix.AF_TIPC, unix.SOCK_RDM, 0}, false},
	{"AF_CAN", sockCall{false, unix.AF_CAN, unix.SOCK_RAW, 1}, false},
	{"AF_RDS", sockCall{false, unix.AF_RDS, unix.SOCK_SEQPACKET, 0}, false},
	{"AF_LLC", sockCall{false, unix.AF_LLC, unix.SOCK_DGRAM, 0}, false},
	{"AF_APPLETALK", sockCall{false, unix.AF_APPLETALK, unix.SOCK_DGRAM, 0}, false},
	{"AF_X25", sockCall{false, unix.AF_X25, unix.SOCK_SEQPACKET, 0}, false},
	{"AF_AX25", sockCall{false, unix.AF_AX25, unix.SOCK_SEQPACKET, 0}, false},
	{"AF_RXRPC", sockCall{false, unix.AF_RXRPC, unix.SOCK_DGRAM, unix.AF_INET}, false},
	{"AF_KCM", sockCall{false, unix.AF_KCM, unix.SOCK_DGRAM, 0}, false},
	{"AF_QIPCRTR", sockCall{false, unix.AF_QIPCRTR, unix.SOCK_DGRAM, 0}, false},
	{"AF_SMC", sockCall{false, unix.AF_SMC, unix.SOCK_STREAM, 0}, false},
	{"AF_MCTP", sockCall{false, unix.AF_MCTP, unix.SOCK_DGRAM, 0}, false},
	{"a family past the last one", sockCall{false, 1000, unix.SOCK_STREAM, 0}, false},
	{"a negative family", sockCall{false, ^uint64(0), unix.SOCK_STREAM, 0}, false},
	{"AF_UNIX with junk in the high bits", sockCall{false, 1<<32 | unix.AF_UNIX, unix.SOCK_STREAM, 0}, false},
	{"socketpair AF_INET", sockCall{true, unix.AF_INET, unix.SOCK_STREAM, 0}, false},
	{"socketpair AF_NETLINK", sockCall{true, unix.AF_NETLINK, unix.SOCK_RAW, unix.NETLINK_ROUTE}, false},
	{"socketpair AF_TIPC", sockCall{true, unix.AF_TIPC, unix.SOCK_SEQPACKET, 0}, false},
	{"socketpair AF_VSOCK", sockCall{true, unix.AF_VSOCK, unix.SOCK_STREAM, 0}, false},
}

// decide is what profile p answers a call with, read as libseccomp
// compiles it: the rules naming the call OR together, the conditions of a
// rule AND together, and no matching rule means the default action. Rules
// that match with different answers are an error: which one the filter
// obeys is then up to libseccomp.
func decide(p *specs.LinuxSeccomp, name string, args [6]uint64) (specs.LinuxSeccompAction, uint, error) {
	type answer struct {
		act   specs.LinuxSeccompAction
		errno uint
	}
	var got []answer
	for _, s := range p.Syscalls {
		if !slices.Contains(s.Names, name) {
			continue
		}
		match := true
		for _, a := range s.Args {
			v := args[a.Index]
			switch a.Op {
			case specs.OpEqualTo:
				match = match && v == a.Value
			case specs.OpNotEqual:
				match = match && v != a.Value
			case specs.OpGreaterThan:
				match = match && v > a.Value
			case specs.OpGreaterEqual:
				match = match && v >= a.Value
			case specs.OpLessThan:
				match = match && v < a.Value
			case specs.OpLessEqual:
				match = match && v <= a.Value
			case specs.OpMaskedEqual:
				match = match && v&a.Value == a.ValueTwo
			default:
				return "", 0, fmt.Errorf("unknown operator %s", a.Op)
			}
		}
		if !match {
			continue
		}
		ans := answer{act: s.Action}
		if s.Action == specs.ActErrno {
			ans.errno = *p.DefaultErrnoRet
			if s.ErrnoRet != nil {
				ans.errno = *s.ErrnoRet
			}
		}
		if !slices.Contains(got, ans) {
			got = append(got, ans)
		}
	}
	switch len(got) {
	case 0:
		return p.DefaultAction, *p.DefaultErrnoRet, nil
	case 1:
		return got[0].act, got[0].errno, nil
	}
	return "", 0, fmt.Errorf("rules disagree: %v", got)
}

func (c sockCall) syscall() string {
	if c.pair {
		return "socketpair"
	}
	return "socket"
}

// TestSocketFamilies reads the profile's rules for socket and socketpair
// family by family: only the families a sandbox needs are allowed, every
// other one is refused with EAFNOSUPPORT (what a kernel without the
// family says, so programs fall back cleanly).
func TestSocketFamilies(t *testing.T) {
	p, err := Profile(Config{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range sockCalls {
		t.Run(tc.name, func(t *testing.T) {
			act, errno, err := decide(p, tc.call.syscall(), [6]uint64{tc.call.family, tc.call.typ, tc.call.proto})
			switch {
			case err != nil:
				t.Fatal(err)
			case tc.allowed && act != specs.ActAllow:
				t.Fatalf("refused (%s, errno %d), must be allowed", act, errno)
			case !tc.allowed && (act != specs.ActErrno || errno != uint(unix.EAFNOSUPPORT)):
				t.Fatalf("answered %s (errno %d), must fail with EAFNOSUPPORT", act, errno)
			}
		})
	}
	for _, name := range []string{"socket", "socketpair"} {
		if slices.Contains(Allowed(Config{}), name) {
			t.Errorf("%s must not be allowed whatever its family", name)
		}
	}
}

// TestSocketFamiliesOperator checks the operator's say: denying socket
// refuses it with the default errno for every family; allowing it lifts
// the family filter.
func TestSocketFamiliesOperator(t *testing.T) {
	unixStream := [6]uint64{unix.AF_UNIX, unix.SOCK_STREAM, 0}
	vsock := [6]uint64{unix.AF_VSOCK, unix.SOCK_STREAM, 0}
	for _, tc := range []struct {
		name  string
		cfg   Config
		call  string
		args  [6]uint64
		want  specs.LinuxSeccompAction
		errno uint
	}{
		{"deny socket", Config{Deny: []string{"socket"}}, "socket", unixStream, specs.ActErrno, uint(unix.EPERM)},
		{"deny socketpair", Config{Deny: []string{"socketpair"}}, "socketpair", unixStream, specs.ActErrno, uint(unix.EPERM)},
		{"allow socket", Config{Allow: []string{"socket"}}, "socket", vsock, specs.ActAllow, 0},
		{"allow socketpair", Config{Allow: []string{"socketpair"}}, "socketpair", vsock, specs.ActAllow, 0},
		{"deny wins over allow", Config{Allow: []string{"socket"}, Deny: []string{"socket"}}, "socket", unixStream, specs.ActErrno, uint(unix.EPERM)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Profile(tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			act, errno, err := decide(p, tc.call, tc.args)
			if err != nil || act != tc.want || errno != tc.errno {
				t.Fatalf("got %s errno %d (%v), want %s errno %d", act, errno, err, tc.want, tc.errno)
			}
		})
	}
}

// probeEnv makes the test binary a child that loads the default profile
// with libcontainer, as a sandbox's init does, and makes sockCalls under it.
const probeEnv = "SANDBOXD_SECCOMP_SOCKET_PROBE"

func TestMain(m *testing.M) {
	if os.Getenv(probeEnv) == "1" {
		probeUnderFilter()
		return
	}
	os.Exit(m.Run())
}

// probeUnderFilter loads the default profile on this thread (libcontainer
// loads it without TSYNC: the thread is locked so every call below is
// filtered) and prints each call's errno as JSON.
func probeUnderFilter() {
	runtime.LockOSThread()
	fail := func(err error) {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	p, err := Profile(Config{})
	if err != nil {
		fail(err)
	}
	cfg, err := specconv.SetupSeccomp(p)
	if err != nil {
		fail(err)
	}
	// no_new_privs lets an unprivileged process load a filter.
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		fail(err)
	}
	if _, err := lcseccomp.InitSeccomp(cfg); err != nil {
		fail(err)
	}
	out := map[string]unix.Errno{}
	for _, tc := range sockCalls {
		out[tc.name] = tc.call.do()
	}
	b, _ := json.Marshal(out)
	os.Stdout.Write(b)
	os.Exit(0)
}

// do makes the call with its raw arguments and closes what it opened.
func (c sockCall) do() unix.Errno {
	if c.pair {
		var fds [2]int32
		_, _, e := unix.RawSyscall6(unix.SYS_SOCKETPAIR, uintptr(c.family), uintptr(c.typ), uintptr(c.proto), uintptr(unsafe.Pointer(&fds)), 0, 0)
		if e == 0 {
			unix.Close(int(fds[0]))
			unix.Close(int(fds[1]))
		}
		return e
	}
	fd, _, e := unix.RawSyscall(unix.SYS_SOCKET, uintptr(c.family), uintptr(c.typ), uintptr(c.proto))
	if e == 0 {
		unix.Close(int(fd))
	}
	return e
}

// TestSocketFamiliesInTheKernel loads the profile as libcontainer compiles
// it and makes each call for real: an allowed call does what it does
// without the filter, a refused one fails with EAFNOSUPPORT.
func TestSocketFamiliesInTheKernel(t *testing.T) {
	if !lcseccomp.Enabled {
		t.Fatal("built without seccomp: run the tests with -tags seccomp")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), probeEnv+"=1")
	var stderr []byte
	out, err := cmd.Output()
	if ee, ok := err.(*exec.ExitError); ok {
		stderr = ee.Stderr
	}
	if err != nil {
		t.Fatalf("probe under the filter: %v\n%s", err, stderr)
	}
	var got map[string]unix.Errno
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("probe output %q: %v", out, err)
	}
	for _, tc := range sockCalls {
		e, ok := got[tc.name]
		switch {
		case !ok:
			t.Errorf("%s: not probed", tc.name)
		case tc.allowed:
			// This host's own answer: a kernel without IPv6 says
			// EAFNOSUPPORT with or without the filter.
			if want := tc.call.do(); e != want {
				t.Errorf("%s: errno %d under the filter, %d without", tc.name, e, want)
			}
		case e != unix.EAFNOSUPPORT:
			t.Errorf("%s: errno %d (%v), want EAFNOSUPPORT", tc.name, e, e)
		}
	}
}
