package isolation

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
)

// The kernel's /proc/meminfo, cpuinfo, stat and uptime describe the whole
// host, so programs that size themselves from them (thread pools, heaps)
// take a session for the host. lxcfs, a FUSE filesystem, serves the same
// files computed for the cgroup and pid namespace of whoever reads them:
// MemTotal is the reader's memory limit, cpuinfo and stat list the CPUs
// its cpuset (and, with --enable-cfs, its CPU quota) allows, uptime counts
// from its pid namespace's start. As LXC and Kubernetes' lxcfs setups do,
// each sandbox gets those files bound read-only over its own.

// lxcfsFiles are the files of an lxcfs mount shown in sandboxes, relative
// to its root and to the sandbox's. runc allows exactly these under /proc
// (libcontainer's checkProcMount).
var lxcfsFiles = []string{
	"proc/meminfo",
	"proc/cpuinfo",
	"proc/stat",
	"proc/uptime",
	"proc/loadavg",
	"proc/diskstats",
	"proc/swaps",
	"sys/devices/system/cpu/online",
}

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

// lxcfsServing checks dir is a live lxcfs mount: a FUSE filesystem whose
// proc/meminfo reads (a dead lxcfs leaves a mount whose files fail with
// ENOTCONN, which sandboxes must not inherit). It returns the files of
// lxcfsFiles that dir has.
func lxcfsServing(dir string) ([]string, error) {
	if dir == "" {
		return nil, errors.New("lxcfs_dir is empty: turned off")
	}
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	if st.Type != unix.FUSE_SUPER_MAGIC {
		return nil, fmt.Errorf("%s is not a FUSE mount: lxcfs is not running there", dir)
	}
	f, err := os.Open(filepath.Join(dir, "proc/meminfo"))
	if err != nil {
		return nil, fmt.Errorf("lxcfs at %s does not serve: %w", dir, err)
	}
	defer f.Close()
	if _, err := f.Read(make([]byte, 64)); err != nil {
		return nil, fmt.Errorf("lxcfs at %s does not serve: %w", dir, err)
	}
	var present []string
	for _, name := range lxcfsFiles {
		if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
			present = append(present, name)
		}
	}
	return present, nil
}

// procView is what a starting sandbox shows of lxcfs: nothing when lxcfs
// is off or not serving (checked at each start, so a sandbox never binds a
// dead mount and one started after lxcfs came up gets its view).
func (r *Runtime) procView() []specs.Mount {
	present, err := lxcfsServing(r.lxcfsDir)
	if err != nil {
		return nil
	}
	return procViewMounts(r.lxcfsDir, present)
}

// ProcViewProblem says why sandboxes show the host's /proc/meminfo,
// cpuinfo, stat and uptime ("" when lxcfs serves their own).
func (r *Runtime) ProcViewProblem() string {
	if _, err := lxcfsServing(r.lxcfsDir); err != nil {
		return err.Error()
	}
	return ""
}
