package runsc

import (
	"github.com/opencontainers/runtime-spec/specs-go"

	"github.com/sandboxd/sandboxd/isolation"
)

// spec is the OCI spec of a runsc sandbox: runc's, with the agent as its
// process and the agent's folder bound from the host. The seccomp
// allowlist in gVisor's form (seccomp.GvisorProfile), which gVisor applies
// to the sandbox's processes inside (--oci-seccomp): the Sentry stands
// between the code and the host, but code must not do more under gVisor
// than under runc either (make namespaces of gVisor's own, say). Its
// monitored form is runc's alone: the refusals it reports are the host
// kernel's. Without device rules and
// lxcfs's /proc files (gVisor's devices and /proc are its own).
func (e *engine) spec(l *isolation.Launch) *specs.Spec {
	s := l.Spec
	spec := e.r.OCISpec(l)
	spec.Linux.Seccomp = e.seccomp
	host := gvisorResources(s.Limits)
	spec.Linux.Resources.Memory, spec.Linux.Resources.Pids = host.Memory, host.Pids
	if s.Limits.Pids > 0 {
		// gVisor keeps the session's pids limit inside: tasks of the
		// sandbox's user, which every process in it runs as.
		n := uint64(s.Limits.Pids)
		spec.Process.Rlimits = append(spec.Process.Rlimits, specs.POSIXRlimit{Type: "RLIMIT_NPROC", Hard: n, Soft: n})
	}
	spec.Linux.Resources.Devices = nil
	spec.Mounts = append(spec.Mounts, l.AgentDirMount())
	spec.Process.Args = l.Args
	spec.Process.Env = l.Env
	spec.Process.Cwd = s.User.HomeDir()
	spec.Process.User = specs.User{UID: uint32(e.r.UID()), GID: uint32(e.r.GID())}
	spec.Annotations = map[string]string{runscNetworkKey: runscNetwork(s)}
	return spec
}

// The host's pids cgroup of a runsc sandbox counts the Sentry's and the
// gofer's threads, not the sandbox's processes: ~50 idle, and at a shell
// fork bomb's peak, on the ptrace platform, 417 host tasks for 32 processes
// inside and 1300-2900 for 128 (measured, the more the busier the host),
// more per process the more there are: 24 a process was too few (CI).
// The session's limit holds inside (RLIMIT_NPROC, which gVisor enforces);
// the host's is the room the Sentry needs to get there, so that a fork
// bomb fails its forks instead of killing the Sentry, up to a cap that
// keeps one sandbox from taking the host's pid space (pid_max is 32768 on
// many hosts): above ~300 processes a bomb may end the sandbox instead
// (the session restarts, as after a memory kill).
const (
	gvisorPidsBase   = 128
	gvisorPidsFactor = 48
	gvisorPidsCap    = 8192
)

// gvisorResources are the host cgroup's resources for a runsc sandbox of
// limits l: room for the Sentry above the session's memory and pids limits,
// which hold inside (watchMemory, RLIMIT_NPROC).
func gvisorResources(l isolation.Limits) *specs.LinuxResources {
	res := l.Resources()
	if m := res.Memory; m != nil && m.Limit != nil {
		hard := *m.Limit + gvisorMemoryRoom(*m.Limit)
		m.Limit, m.Swap = &hard, &hard
	}
	if l.Pids > 0 {
		n := min(gvisorPidsBase+gvisorPidsFactor*l.Pids, gvisorPidsCap)
		res.Pids = &specs.LinuxPids{Limit: &n}
	}
	return res
}
