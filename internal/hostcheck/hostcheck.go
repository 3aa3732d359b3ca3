// Package hostcheck inspects a host for what sandboxd needs and says
// plainly what is missing or weaker than expected (sandboxctl doctor).
package hostcheck

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/google/nftables"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/sandboxd/sandboxd/api"
)

// Status of one check.
type Status string

// Statuses, from good to bad.
const (
	OK   Status = "ok"
	Info Status = "info" // worth knowing, changes nothing
	Warn Status = "warn" // works, but weaker or closer to a limit than expected
	Fail Status = "fail" // sandboxd cannot work like this
)

// Result is one check's finding.
type Result struct {
	Name   string `json:"name"`
	Status Status `json:"status"`
	Detail string `json:"detail"`
}

// Host is what the checks look at. Its paths are fields so tests can point
// them at a made-up host.
type Host struct {
	Proc    string // /proc
	Sys     string // /sys
	Cgroup  string // /sys/fs/cgroup
	Socket  string // the daemon's socket
	DataDir string // the daemon's data dir
	RunDir  string // the daemon's run dir
	Python  string // the default template's interpreter
	Dev     string // /dev
	LXCFS   string // the daemon's lxcfs_dir
	// LXCFSBinary is the host's lxcfs program ("": not installed), which
	// the daemon runs itself where nothing serves at LXCFS.
	LXCFSBinary string
	// RunscPath and RunscPlatform are the daemon's [runsc] path ("":
	// runsc on PATH) and platform ("": ptrace).
	RunscPath     string
	RunscPlatform string
	// Probes answer what only the sandbox runtime's packages know.
	Probes Probes
}

// Probes are what checks ask of the sandbox runtime's own packages: where
// mkfs.ext4 is, whether lxcfs serves at a folder. The caller passes them
// (sandboxctl doctor: isolation's), so hostcheck depends on no runtime
// package and the runtime may depend on it; a test answers for them. A
// nil probe's check says it was not made.
type Probes struct {
	// Mkfs finds mkfs.ext4 (isolation/volume.FindMkfs).
	Mkfs func() (string, error)
	// LXCFS says whether lxcfs serves at dir: nil if it does; stalled
	// when it is mounted but does not answer (isolation/lxcfs.Serving).
	LXCFS func(dir string) (stalled bool, err error)
}

// Default is this machine with the default paths.
// lxcfsBinary is the host's lxcfs program ("": not installed), which the
// daemon runs where nothing serves at lxcfs_dir.
func Default(socket, dataDir, runDir, lxcfsBinary string, p Probes) Host {
	return Host{Proc: "/proc", Sys: "/sys", Cgroup: "/sys/fs/cgroup", Socket: socket, DataDir: dataDir, RunDir: runDir, Python: "/usr/bin/python3", Dev: "/dev",
		LXCFS: "/var/lib/lxcfs", LXCFSBinary: lxcfsBinary, Probes: p}
}

// Run runs every check.
func (h Host) Run() []Result {
	return []Result{
		h.Kernel(), h.Cgroups(), h.Seccomp(), h.Openat2(), h.UserNamespaces(),
		h.PythonTemplate(), h.Runsc(), h.RunscHugePages(), h.SocketAccess(), h.Folders(), h.Disk(), h.DiskQuota(), h.LXCFSServes(), h.Networking(),
	}
}

// Failed reports whether any result is a failure.
func Failed(rs []Result) bool {
	for _, r := range rs {
		if r.Status == Fail {
			return true
		}
	}
	return false
}

func (h Host) read(rel string) (string, error) {
	b, err := os.ReadFile(filepath.Join(h.Proc, rel))
	return strings.TrimSpace(string(b)), err
}

// Kernel reports the running kernel.
func (h Host) Kernel() Result {
	rel, err := h.read("sys/kernel/osrelease")
	if err != nil {
		return Result{"kernel", Warn, "cannot read the kernel release: " + err.Error()}
	}
	return Result{"kernel", OK, "Linux " + rel}
}

// Cgroups checks the hierarchy and the controllers sandboxes need.
func (h Host) Cgroups() Result {
	want := []string{"cpu", "memory", "pids"}
	var st unix.Statfs_t
	if err := unix.Statfs(h.Cgroup, &st); err != nil {
		return Result{"cgroups", Fail, fmt.Sprintf("%s is not mounted: %v", h.Cgroup, err)}
	}
	if st.Type == unix.CGROUP2_SUPER_MAGIC {
		b, err := os.ReadFile(filepath.Join(h.Cgroup, "cgroup.controllers"))
		if err != nil {
			return Result{"cgroups", Fail, "v2, but cgroup.controllers cannot be read: " + err.Error()}
		}
		have := strings.Fields(string(b))
		if missing := missingOf(want, have); len(missing) > 0 {
			return Result{"cgroups", Fail, fmt.Sprintf("v2 without the %s controller(s)", strings.Join(missing, ", "))}
		}
		return Result{"cgroups", OK, "v2 (unified), controllers: " + strings.Join(have, " ")}
	}
	var missing []string
	for _, c := range want {
		var cst unix.Statfs_t
		if unix.Statfs(filepath.Join(h.Cgroup, c), &cst) != nil || cst.Type != unix.CGROUP_SUPER_MAGIC {
			missing = append(missing, c)
		}
	}
	if len(missing) > 0 {
		return Result{"cgroups", Fail, fmt.Sprintf("v1 without the %s controller(s) mounted", strings.Join(missing, ", "))}
	}
	return Result{"cgroups", Warn, "v1 (legacy): works, but v2 is what sandboxd is built for; boot with systemd.unified_cgroup_hierarchy=1"}
}

func missingOf(want, have []string) []string {
	var out []string
	for _, w := range want {
		found := false
		for _, h := range have {
			if h == w {
				found = true
			}
		}
		if !found {
			out = append(out, w)
		}
	}
	return out
}

// Seccomp checks the kernel filters system calls with the actions the
// profile uses.
func (h Host) Seccomp() Result {
	acts, err := h.read("sys/kernel/seccomp/actions_avail")
	if err != nil {
		return Result{"seccomp", Fail, "the kernel has no seccomp filter support (CONFIG_SECCOMP_FILTER)"}
	}
	if missing := missingOf([]string{"errno", "allow"}, strings.Fields(acts)); len(missing) > 0 {
		return Result{"seccomp", Fail, "the kernel lacks seccomp actions: " + strings.Join(missing, ", ")}
	}
	return Result{"seccomp", OK, "filter actions: " + acts}
}

// Openat2 checks the system call the file API resolves paths with (5.6+).
func (h Host) Openat2() Result {
	fd, err := unix.Openat2(unix.AT_FDCWD, "/", &unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC, Resolve: unix.RESOLVE_BENEATH})
	if err == unix.ENOSYS {
		return Result{"openat2", Fail, "the kernel has no openat2 (needs Linux 5.6 or later): the file API cannot resolve paths safely"}
	}
	if err == nil {
		unix.Close(fd)
	}
	return Result{"openat2", OK, "available"}
}

// UserNamespaces reports what the host allows: every sandbox gets a user
// namespace unless the config turns them off.
func (h Host) UserNamespaces() Result {
	if v, err := h.read("sys/user/max_user_namespaces"); err == nil && v == "0" {
		return Result{"user namespaces", Warn, "disabled (user.max_user_namespaces = 0): sandboxd starts only with [userns] enabled = false, and sandboxes are then weaker"}
	}
	if v, err := h.read("sys/kernel/unprivileged_userns_clone"); err == nil && v == "0" {
		return Result{"user namespaces", Info, "unprivileged user namespaces are off (kernel.unprivileged_userns_clone = 0); sandboxd runs as root and is not affected"}
	}
	if v, err := h.read("sys/kernel/apparmor_restrict_unprivileged_userns"); err == nil && v == "1" {
		return Result{"user namespaces", Info, "AppArmor restricts unprivileged user namespaces (kernel.apparmor_restrict_unprivileged_userns = 1); sandboxd runs as root and is not affected"}
	}
	return Result{"user namespaces", OK, "available"}
}

// PythonTemplate checks the interpreter the default template runs.
func (h Host) PythonTemplate() Result {
	fi, err := os.Stat(h.Python)
	if err != nil || fi.Mode()&0o111 == 0 {
		return Result{"python template", Fail, h.Python + " is missing: install the python3 package"}
	}
	out, err := exec.Command(h.Python, "--version").CombinedOutput()
	if err != nil {
		return Result{"python template", Fail, fmt.Sprintf("%s does not run: %v", h.Python, err)}
	}
	return Result{"python template", OK, strings.TrimSpace(string(out))}
}

// SocketAccess checks the daemon's socket exists, who may use it, and that
// this caller can.
func (h Host) SocketAccess() Result {
	fi, err := os.Stat(h.Socket)
	if err != nil {
		return Result{"socket", Fail, fmt.Sprintf("%s does not exist: is sandboxd running?", h.Socket)}
	}
	st := fi.Sys().(*syscall.Stat_t)
	group := strconv.Itoa(int(st.Gid))
	if g, err := user.LookupGroupId(group); err == nil {
		group = g.Name
	}
	detail := fmt.Sprintf("%s mode %04o group %s", h.Socket, fi.Mode().Perm(), group)
	c, err := net.DialTimeout("unix", h.Socket, 2*time.Second)
	if err != nil {
		if os.IsPermission(err) || strings.Contains(err.Error(), "permission denied") {
			return Result{"socket", Fail, detail + ": permission denied: run as root or join the group"}
		}
		return Result{"socket", Fail, detail + ": cannot connect: is sandboxd running?"}
	}
	c.Close()
	if fi.Mode().Perm()&0o006 != 0 {
		return Result{"socket", Warn, detail + ": every user of this host may use sandboxd"}
	}
	return Result{"socket", OK, detail}
}

// Disk checks the space left where workspaces live.
func (h Host) Disk() Result {
	dir := h.DataDir
	for {
		if _, err := os.Stat(dir); err == nil || dir == "/" {
			break
		}
		dir = filepath.Dir(dir)
	}
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return Result{"disk", Warn, fmt.Sprintf("cannot read free space of %s: %v", dir, err)}
	}
	free := st.Bavail * uint64(st.Bsize)
	detail := fmt.Sprintf("%.1f GiB free for %s", float64(free)/(1<<30), h.DataDir)
	switch {
	case free < 1<<30:
		return Result{"disk", Fail, detail + ": under 1 GiB, sessions will run out of space"}
	case free < 10<<30:
		return Result{"disk", Warn, detail + ": under 10 GiB"}
	}
	return Result{"disk", OK, detail}
}

// DataDirFloor is the daemon's own view of its data dir's space, from
// /v1/health: what it has free against data_dir_min_free_mb, below which
// it refuses new session disks. Disk() cannot say this: the floor is in
// the daemon's config.
func DataDirFloor(freeMB, minFreeMB int64, ok bool) Result {
	detail := fmt.Sprintf("%d MiB free, floor %d MiB (data_dir_min_free_mb)", freeMB, minFreeMB)
	if !ok {
		return Result{"data dir space", Fail, detail + ": below the floor, sandboxd refuses new sessions; delete sessions or free space"}
	}
	return Result{"data dir space", OK, detail}
}

// DiskQuota checks what disk_quota = "loop" needs: loop devices and
// mkfs.ext4.
func (h Host) DiskQuota() Result {
	if _, err := os.Stat(filepath.Join(h.Dev, "loop-control")); err != nil {
		return Result{"disk quota", Warn, "no loop devices (" + filepath.Join(h.Dev, "loop-control") + " is missing): load the loop module, or set disk_quota = \"none\" and disk_mb is not enforced"}
	}
	if h.Probes.Mkfs == nil {
		return Result{"disk quota", Info, "mkfs.ext4 not looked for"}
	}
	if _, err := h.Probes.Mkfs(); err != nil {
		return Result{"disk quota", Warn, "mkfs.ext4 is missing: install e2fsprogs, or set disk_quota = \"none\" and disk_mb is not enforced"}
	}
	return Result{"disk quota", OK, "loop devices and mkfs.ext4: each session gets a filesystem of disk_mb"}
}

// LXCFSServes checks lxcfs serves at the daemon's lxcfs_dir: without it
// sandboxes work, but see the host's memory, CPUs and uptime in /proc.
func (h Host) LXCFSServes() Result {
	const name = "lxcfs"
	if h.LXCFS == "" {
		return Result{name, Info, "lxcfs_dir is off: sandboxes see the host's /proc/meminfo, cpuinfo, stat and uptime"}
	}
	if h.Probes.LXCFS == nil {
		return Result{name, Info, "not looked at " + h.LXCFS}
	}
	stalled, err := h.Probes.LXCFS(h.LXCFS)
	switch {
	case stalled:
		return Result{name, Warn, fmt.Sprintf("%v: restart lxcfs.service", err)}
	case err != nil && h.LXCFSBinary != "":
		return Result{name, Info, "not serving at " + h.LXCFS + "; lxcfs is installed: the daemon runs its own under its run dir, so sandboxes see their own memory, CPUs and uptime"}
	case err != nil:
		return Result{name, Warn, "not serving at " + h.LXCFS + ": sandboxes see the host's /proc/meminfo, cpuinfo, stat and uptime, not their own limits; install lxcfs (its service mounts it there, or the daemon runs it)"}
	}
	return Result{name, OK, "serving at " + h.LXCFS + ": sandboxes see their own memory, CPUs and uptime"}
}

// DaemonProcView reports which lxcfs the running daemon serves its
// sandboxes' /proc view from (GET /v1/info proc_view).
func DaemonProcView(pv api.ProcViewInfo) Result {
	const name = "lxcfs (daemon)"
	switch pv.ServedBy {
	case api.ProcViewSystem:
		return Result{name, OK, "the system's lxcfs serves sandboxes their own memory, CPUs and uptime"}
	case api.ProcViewDaemon:
		return Result{name, OK, "the daemon's own lxcfs serves sandboxes their own memory, CPUs and uptime"}
	case "":
		return Result{name, Info, "the daemon does not say (older than its proc_view)"}
	}
	return Result{name, Warn, "sandboxes see the host's /proc/meminfo, cpuinfo, stat and uptime: " + pv.Problem}
}

// Networking checks what sessions with a network need: netlink, nftables,
// forwarding (the daemon turns it on), and no other table that drops
// forwarded traffic by default (Docker's iptables FORWARD policy).
func (h Host) Networking() Result {
	r := Result{Name: "networking"}
	// An interrupted dump (links changed meanwhile) is netlink answering.
	if _, err := netlink.LinkList(); err != nil && !errors.Is(err, netlink.ErrDumpInterrupted) {
		r.Status, r.Detail = Fail, "netlink does not answer: "+err.Error()
		return r
	}
	c, err := nftables.New()
	if err == nil {
		var chains []*nftables.Chain
		if chains, err = c.ListChains(); err == nil {
			for _, ch := range chains {
				if ch.Hooknum != nil && *ch.Hooknum == *nftables.ChainHookForward && ch.Policy != nil && *ch.Policy == nftables.ChainPolicyDrop {
					r.Status = Warn
					r.Detail = fmt.Sprintf("the forward chain %q of table %q drops by default (Docker's iptables FORWARD policy does): sandboxes' traffic needs an accept there, e.g. in DOCKER-USER", ch.Name, ch.Table.Name)
					return r
				}
			}
		}
	}
	if err != nil {
		if os.Geteuid() != 0 {
			r.Status, r.Detail = Info, "nftables can only be checked as root"
			return r
		}
		r.Status, r.Detail = Fail, "nftables does not answer ("+err.Error()+"): sessions can have network \"none\" only"
		return r
	}
	fwd, _ := h.read("sys/net/ipv4/ip_forward")
	r.Status, r.Detail = OK, "netlink and nftables answer"
	if fwd != "1" {
		r.Detail += "; IPv4 forwarding is off (the daemon turns it on at start)"
	}
	return r
}
