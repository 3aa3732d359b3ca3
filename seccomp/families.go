package seccomp

import (
	"slices"

	"github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
)

// family is an address family sandboxes may open sockets of. If only is
// set, protocol (socket's third argument) is the one protocol allowed in it.
type family struct {
	af       uint64
	only     bool
	protocol uint64
}

// socketFamilies are what sandboxed programs need: local sockets, IPv4 and
// IPv6 (the sandbox's network namespace, not the filter, decides what they
// reach: a filter cannot change once the sandbox runs, and network policies
// change live), and netlink route alone, which getaddrinfo, getifaddrs and
// ip read addresses and routes with. Everything else is refused — notably
// AF_VSOCK, the way to the hypervisor on a VM host, AF_PACKET, and the
// kernel-facing netlink protocols (audit, uevent, sock_diag, netfilter,
// xfrm, generic).
var socketFamilies = []family{
	{af: unix.AF_UNIX},
	{af: unix.AF_INET},
	{af: unix.AF_INET6},
	{af: unix.AF_NETLINK, only: true, protocol: unix.NETLINK_ROUTE},
}

// pairFamilies are the families of socketpair: AF_UNIX alone (pairs of
// any other family are of no use to a sandbox).
var pairFamilies = []family{{af: unix.AF_UNIX}}

// familyRules lets syscall name (socket or socketpair: family first,
// protocol third) make sockets of the given families and refuses every
// other family with EAFNOSUPPORT — what a kernel built without the family
// answers, so that programs fall back as they would there, rather than
// report a permission error.
//
// A filter cannot say "any other value": libseccomp lets a call's rules OR
// together but an unconditional rule swallows the conditional ones. So the
// refusals are spelled out: one rule per unused family below the highest
// allowed one, one for every value above it (which also catches junk in
// the upper 32 bits, which the kernel would ignore: the comparisons are on
// all 64), and, for a family limited to one protocol, one for any other
// protocol.
func familyRules(name string, fams []family) []specs.LinuxSyscall {
	eafnosupport := uint(unix.EAFNOSUPPORT)
	var rules []specs.LinuxSyscall
	add := func(allow bool, args ...specs.LinuxSeccompArg) {
		r := specs.LinuxSyscall{Names: []string{name}, Action: specs.ActAllow, Args: args}
		if !allow {
			r.Action, r.ErrnoRet = specs.ActErrno, &eafnosupport
		}
		rules = append(rules, r)
	}
	is := func(v uint64) specs.LinuxSeccompArg {
		return specs.LinuxSeccompArg{Index: 0, Value: v, Op: specs.OpEqualTo}
	}
	var top uint64
	for _, f := range fams {
		top = max(top, f.af)
	}
	for af := uint64(0); af <= top; af++ {
		i := slices.IndexFunc(fams, func(f family) bool { return f.af == af })
		switch {
		case i < 0:
			add(false, is(af))
		case !fams[i].only:
			add(true, is(af))
		default:
			p := fams[i].protocol
			add(true, is(af), specs.LinuxSeccompArg{Index: 2, Value: p, Op: specs.OpEqualTo})
			add(false, is(af), specs.LinuxSeccompArg{Index: 2, Value: p, Op: specs.OpNotEqual})
		}
	}
	add(false, specs.LinuxSeccompArg{Index: 0, Value: top, Op: specs.OpGreaterThan})
	return rules
}
