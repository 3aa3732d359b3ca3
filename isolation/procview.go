package isolation

import (
	"path/filepath"

	"github.com/opencontainers/runtime-spec/specs-go"

	"github.com/sandboxd/sandboxd/isolation/lxcfs"
)

// The kernel's /proc/meminfo, cpuinfo, stat and uptime describe the whole
// host, so programs that size themselves from them (thread pools, heaps)
// take a session for the host. lxcfs, a FUSE filesystem, serves the same
// files computed for the cgroup and pid namespace of whoever reads them:
// MemTotal is the reader's memory limit, cpuinfo and stat list the CPUs
// its cpuset (and, with --enable-cfs, its CPU quota) allows, uptime counts
// from its pid namespace's start. As LXC and Kubernetes' lxcfs setups do,
// each sandbox gets those files bound read-only over its own.

// bindProcView are the options of an lxcfs file in a sandbox.
var bindProcView = []string{"bind", "ro", "nosuid", "nodev", "noexec"}

// procViewMounts are the mounts that show the files of the lxcfs mount at
// dir that exist (present) over the sandbox's own. They come after runc's
// /proc and /sys mounts in the spec, so they land on top of them.
func procViewMounts(dir string, present []string) []specs.Mount {
	var ms []specs.Mount
	for _, f := range present {
		ms = append(ms, specs.Mount{Destination: "/" + f, Type: "bind", Source: filepath.Join(dir, f), Options: bindProcView})
	}
	return ms
}

// procView is what a starting sandbox shows of lxcfs: nothing when lxcfs
// is off or not serving (checked at each start, so a sandbox never binds a
// dead mount and one started after lxcfs came up gets its view).
func (r *Runtime) procView() []specs.Mount {
	present, err := lxcfs.Serving(r.lxcfsDir)
	if err != nil {
		return nil
	}
	return procViewMounts(r.lxcfsDir, present)
}

// ProcViewProblem says why sandboxes show the host's /proc/meminfo,
// cpuinfo, stat and uptime ("" when lxcfs serves their own).
func (r *Runtime) ProcViewProblem() string {
	if _, err := lxcfs.Serving(r.lxcfsDir); err != nil {
		return err.Error()
	}
	return ""
}
