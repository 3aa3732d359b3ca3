package isolation

import (
	"slices"

	"github.com/opencontainers/runc/libcontainer/specconv"
	"github.com/opencontainers/runtime-spec/specs-go"

	"github.com/sandboxd/sandboxd/isolation/idmap"
)

// bindRO and bindRW are the options of host folders shown in a sandbox.
var (
	bindRO = []string{"rbind", "ro", "nosuid", "nodev"}
	bindRW = []string{"bind", "rw", "nosuid", "nodev"}
)

// ociSpec is the OCI spec of one sandbox. It starts from runc's own example
// (its /proc, /dev, /sys mounts and masked and read-only paths), then takes
// away every capability and adds the sandbox's folders, limits and filter.
// img is the image as mountView made it for the sandbox; ownKernel says
// the sandbox runs on a kernel of its own (OwnKernel), whose /proc is its.
func (r *Runtime) ociSpec(s *Spec, p *paths, img *Image, ownKernel bool) *specs.Spec {
	spec := specconv.Example()
	spec.Root = &specs.Root{Path: p.rootfs, Readonly: true}
	spec.Hostname = "sandbox"
	spec.Process.Terminal = false
	spec.Process.Capabilities = &specs.LinuxCapabilities{}
	spec.Process.NoNewPrivileges = true
	spec.Process.Rlimits = []specs.POSIXRlimit{
		{Type: "RLIMIT_NOFILE", Hard: 4096, Soft: 4096},
		{Type: "RLIMIT_CORE", Hard: 0, Soft: 0},
	}
	// The sandbox gets no view of cgroups at all.
	spec.Mounts = slices.DeleteFunc(spec.Mounts, func(m specs.Mount) bool { return m.Destination == "/sys/fs/cgroup" })
	for _, b := range img.binds {
		spec.Mounts = append(spec.Mounts, specs.Mount{Destination: b.dst, Type: "bind", Source: b.src, Options: bindRO})
	}
	spec.Mounts = append(spec.Mounts,
		specs.Mount{Destination: "/etc", Type: "bind", Source: img.etc, Options: bindRO},
		specs.Mount{Destination: "/workspace", Type: "bind", Source: s.Workspace, Options: bindRW},
		specs.Mount{Destination: "/tmp", Type: "bind", Source: s.Tmp, Options: bindRW},
	)
	if h := s.User.homeMount(); h != "" {
		// The same disk as /workspace, so that the home's files are the
		// ones the file API serves at /workspace.
		spec.Mounts = append(spec.Mounts, specs.Mount{Destination: h, Type: "bind", Source: s.Workspace, Options: bindRW})
	}
	if img.packages != "" {
		spec.Mounts = append(spec.Mounts, specs.Mount{Destination: PackagesDir, Type: "bind", Source: img.packages, Options: bindRO})
	}
	if s.Gateway != "" {
		spec.Mounts = append(spec.Mounts, specs.Mount{Destination: GatewayDir, Type: "bind", Source: s.Gateway, Options: slices.Concat(bindRO, []string{"noexec"})})
	}
	spec.Mounts = append(spec.Mounts, r.volumeMounts(s, p)...)
	if !ownKernel {
		spec.Mounts = append(spec.Mounts, r.procView()...)
	}
	// Besides runc's: the kernel's command line (boot parameters; on a VM,
	// its hypervisor's settings) reads empty.
	spec.Linux.MaskedPaths = append(spec.Linux.MaskedPaths, "/proc/cmdline", "/proc/sys/kernel/core_pattern", "/sys/kernel", "/sys/devices/virtual/powercap")
	// runc's example already has a cgroup namespace on v2 hosts.
	if !slices.ContainsFunc(spec.Linux.Namespaces, func(n specs.LinuxNamespace) bool { return n.Type == specs.CgroupNamespace }) {
		spec.Linux.Namespaces = append(spec.Linux.Namespaces, specs.LinuxNamespace{Type: specs.CgroupNamespace})
	}
	if r.userns {
		spec.Linux.Namespaces = append(spec.Linux.Namespaces, specs.LinuxNamespace{Type: specs.UserNamespace})
		m := []specs.LinuxIDMapping{{ContainerID: 0, HostID: s.IDBase, Size: idmap.BlockSize}}
		spec.Linux.UIDMappings, spec.Linux.GIDMappings = m, m
	}
	spec.Linux.CgroupsPath = r.cgroups.PathFor(s.ID)
	if s.NetNS != "" {
		for i, n := range spec.Linux.Namespaces {
			if n.Type == specs.NetworkNamespace {
				spec.Linux.Namespaces[i].Path = s.NetNS
			}
		}
	}
	res := *s.Limits.Resources()
	if set := r.cpus.pick(s.ID, s.Limits.CPUs); set != "" {
		var cpu specs.LinuxCPU
		if res.CPU != nil {
			cpu = *res.CPU
		}
		cpu.Cpus = set
		res.CPU = &cpu
	}
	res.Devices = spec.Linux.Resources.Devices
	spec.Linux.Resources = &res
	spec.Linux.Seccomp = r.seccomp
	if r.monitor != nil {
		spec.Linux.Seccomp = r.monitor.Profile(r.seccomp, r.watched, s.ID)
	}
	return spec
}
