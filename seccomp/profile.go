// Package seccomp owns the system-call filter applied to every sandbox: a
// default allowlist in the spirit of Docker's default profile, which
// operators extend from the daemon config (allow more, deny some) without
// replacing it.
//
// The profile is an OCI LinuxSeccomp, which libcontainer compiles to BPF
// with libseccomp; this package uses libseccomp-golang directly only to check
// names and report the library version.
package seccomp

import (
	"fmt"
	"slices"

	"github.com/containerd/errdefs"
	"github.com/opencontainers/runtime-spec/specs-go"
	libseccomp "github.com/seccomp/libseccomp-golang"
	"golang.org/x/sys/unix"
)

// Config is the operator's say over the profile.
type Config struct {
	// Allow adds syscalls to the allowlist.
	Allow []string `toml:"allow"`
	// Deny removes syscalls from it (Deny wins over Allow).
	Deny []string `toml:"deny"`
	// LogDenied sends refused calls to the daemon, which logs them with the
	// session's id (seccomp user notification), instead of refusing them
	// silently in the kernel.
	LogDenied bool `toml:"log_denied"`
}

// nsFlags are the clone flags that create namespaces: an unprivileged
// process could otherwise make a user namespace and gain capabilities in it.
const nsFlags = unix.CLONE_NEWNS | unix.CLONE_NEWUTS | unix.CLONE_NEWIPC |
	unix.CLONE_NEWUSER | unix.CLONE_NEWPID | unix.CLONE_NEWNET | unix.CLONE_NEWCGROUP

// Profile builds the filter for cfg. Unknown syscall names are an error, so
// a typo in the config is caught at start, not silently ignored.
func Profile(cfg Config) (*specs.LinuxSeccomp, error) {
	for _, name := range append(slices.Clone(cfg.Allow), cfg.Deny...) {
		if _, err := libseccomp.GetSyscallFromName(name); err != nil {
			return nil, errdefs.ErrInvalidArgument.WithMessage(fmt.Sprintf("seccomp: unknown system call %q", name))
		}
	}
	names := Allowed(cfg)
	eperm := uint(unix.EPERM)
	enosys := uint(unix.ENOSYS)
	p := &specs.LinuxSeccomp{
		DefaultAction:   specs.ActErrno,
		DefaultErrnoRet: &eperm,
		Syscalls: []specs.LinuxSyscall{
			{Names: names, Action: specs.ActAllow},
		},
	}
	if !slices.Contains(cfg.Deny, "clone") {
		p.Syscalls = append(p.Syscalls, specs.LinuxSyscall{
			Names:  []string{"clone"},
			Action: specs.ActAllow,
			Args:   []specs.LinuxSeccompArg{{Index: 0, Value: nsFlags, ValueTwo: 0, Op: specs.OpMaskedEqual}},
		})
	}
	// clone3 passes its flags in memory, which a filter cannot read: answer
	// ENOSYS so the C library falls back to clone, which is filtered.
	p.Syscalls = append(p.Syscalls, specs.LinuxSyscall{Names: []string{"clone3"}, Action: specs.ActErrno, ErrnoRet: &enosys})
	// personality: only the harmless domains (as Docker).
	if !slices.Contains(cfg.Deny, "personality") {
		for _, v := range []uint64{0x0, 0x0008, 0x20000, 0x20008, 0xffffffff} {
			p.Syscalls = append(p.Syscalls, specs.LinuxSyscall{
				Names: []string{"personality"}, Action: specs.ActAllow,
				Args: []specs.LinuxSeccompArg{{Index: 0, Value: v, Op: specs.OpEqualTo}},
			})
		}
	}
	// socket and socketpair: the address families a sandbox needs, the
	// rest EAFNOSUPPORT (families.go). An operator who allows the call
	// lifts the family filter (the allowlist then has it); one who denies
	// it refuses it whatever the family.
	for _, c := range []struct {
		name string
		fams []family
	}{{"socket", socketFamilies}, {"socketpair", pairFamilies}} {
		if !slices.Contains(names, c.name) && !slices.Contains(cfg.Deny, c.name) {
			p.Syscalls = append(p.Syscalls, familyRules(c.name, c.fams)...)
		}
	}
	return p, nil
}

// Allowed is the unconditional allowlist after the operator's changes.
func Allowed(cfg Config) []string {
	out := slices.Clone(allowed)
	for _, n := range cfg.Allow {
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	out = slices.DeleteFunc(out, func(n string) bool { return slices.Contains(cfg.Deny, n) })
	slices.Sort(out)
	return out
}

// dangerous are refused calls worth telling the operator about: each is a
// step of a known escape or a probe of the kernel's attack surface, and none
// is used by ordinary programs.
var dangerous = []string{
	"acct", "add_key", "bpf", "chroot", "clock_settime", "delete_module", "finit_module",
	"fsconfig", "fsmount", "fsopen", "fspick", "init_module", "iopl", "ioperm", "kcmp",
	"kexec_file_load", "kexec_load", "keyctl", "lookup_dcookie", "mount", "mount_setattr",
	"move_mount", "open_by_handle_at", "open_tree", "perf_event_open", "pivot_root",
	"process_vm_readv", "process_vm_writev", "ptrace", "quotactl", "reboot", "request_key",
	"setns", "settimeofday", "swapoff", "swapon", "syslog", "umount2", "unshare", "userfaultfd",
}

// Watched are the refused calls the daemon hears of: the dangerous ones and
// whatever the operator denied, less what the operator allowed.
func Watched(cfg Config) []string {
	allowed := Allowed(cfg)
	var out []string
	for _, n := range append(slices.Clone(dangerous), cfg.Deny...) {
		if _, err := libseccomp.GetSyscallFromName(n); err != nil || slices.Contains(allowed, n) || slices.Contains(out, n) {
			continue // not on this architecture, or allowed after all
		}
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// LibraryVersion reports the libseccomp the daemon is linked with.
func LibraryVersion() string {
	maj, mnr, mic := libseccomp.GetLibraryVersion()
	return fmt.Sprintf("%d.%d.%d", maj, mnr, mic)
}
