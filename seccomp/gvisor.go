package seccomp

import (
	"slices"

	"github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
)

// gVisor applies an OCI profile to the processes it runs (runsc
// --oci-seccomp), but reads it its own way (runsc/specutils/seccomp):
//   - it looks the names up in its own system call table and skips the
//     ones it does not know, so a call allowed under a name gVisor spells
//     otherwise is refused (gvisorNames);
//   - every errno action answers EPERM, whatever errnoRet says;
//   - of the rules that match a call, the first decides.

// gvisorNames are names gVisor knows system calls by where they are not
// libseccomp's. Debian 12's runsc (20221219) calls pselect6 "pselect":
// Python's select.select failed with EPERM. Checked by calling every
// allowed system call under that runsc with and without the profile: the
// only other differences were calls gVisor does not have, which answer
// EPERM instead of ENOSYS.
var gvisorNames = map[string]string{"pselect6": "pselect"}

// signalsToInit are the calls that signal a process by the pid in their
// first argument. Linux lets no process of a pid namespace SIGKILL its
// init (the agent); gVisor does (a TODO in its kernel), and code that
// killed the agent ended its sandbox. gVisor's profile refuses them for
// pid 1 instead. The agent's supervisor has one thread (tgkill names it by
// its process, tkill by its tid, 1), kill(-1) spares init in gVisor too,
// and the agent's process group is out of reach (the worker and shell
// commands are sessions of their own).
var signalsToInit = []string{"kill", "tkill", "tgkill", "rt_sigqueueinfo", "rt_tgsigqueueinfo", "pidfd_open"}

// GvisorProfile is Profile(cfg) in the form gVisor reads as cfg means it:
//   - signalsToInit refused for pid 1, first, the pid compared in its low
//     32 bits as the kernel reads it (kill(1<<32|1) is kill(1));
//   - gVisor's names beside libseccomp's;
//   - clone3 allowed unless the operator denied it: refused, it answers
//     EPERM under gVisor, not ENOSYS, and glibc's posix_spawn (system(),
//     os.posix_spawn) falls back to clone only on ENOSYS. clone's namespace
//     flags stay refused; the namespaces clone3 could make are gVisor's
//     own, in the Sentry, as they all were before runsc took a profile.
func GvisorProfile(cfg Config) (*specs.LinuxSeccomp, error) {
	p, err := Profile(cfg)
	if err != nil {
		return nil, err
	}
	eperm := uint(unix.EPERM)
	out := *p
	out.Syscalls = []specs.LinuxSyscall{{
		Names: signalsToInit, Action: specs.ActErrno, ErrnoRet: &eperm,
		Args: []specs.LinuxSeccompArg{{Index: 0, Value: 0xffffffff, ValueTwo: 1, Op: specs.OpMaskedEqual}},
	}}
	for _, rule := range p.Syscalls {
		if slices.Equal(rule.Names, []string{"clone3"}) && !slices.Contains(cfg.Deny, "clone3") {
			rule = specs.LinuxSyscall{Names: rule.Names, Action: specs.ActAllow}
		}
		names := slices.Clone(rule.Names)
		for _, n := range rule.Names {
			if g, ok := gvisorNames[n]; ok {
				names = append(names, g)
			}
		}
		rule.Names = names
		out.Syscalls = append(out.Syscalls, rule)
	}
	return &out, nil
}
