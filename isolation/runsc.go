package isolation

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	ocgroups "github.com/opencontainers/cgroups"
	"github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"

	"github.com/sandboxd/sandboxd/isolation/agent"
)

// gVisor's runsc is the second runtime: the same OCI spec, root view,
// workspace, limits and agent as runc's, run on gVisor's own kernel (the
// Sentry) instead of the host's. The daemon drives runsc's command line,
// as containerd's shim does: create, start, state, delete; a sandbox's
// processes are gVisor's, and the host sees only its sandbox process (and
// gofer), in the sandbox's cgroup. See docs/runsc.md.

// RunscOptions configure the runsc runtime.
type RunscOptions struct {
	// Path is the runsc binary; "" looks for runsc on PATH.
	Path string
	// Platform is how gVisor traps the sandbox's system calls: ptrace
	// (works anywhere), systrap (newer builds), kvm (needs hardware
	// virtualization).
	Platform string
	// Flags are more global flags for every runsc call (e.g. "--debug").
	Flags []string
}

// agentDir is where a runsc sandbox's agent makes its socket: a folder of
// the host's, so the daemon can connect to it (runsc passes no inherited
// listener).
var agentDir = path.Dir(agent.ListenPath)

// runsc runs the runsc binary with the global flags every call needs:
// they must be the same for create, start, state and delete of one
// sandbox, or runsc takes it for another (a start without --network=none
// tries to set a network up).
type runsc struct {
	path     string
	root     string
	platform string
	flags    []string
	version  string
	// networks says gVisor's own network stack can run here: builds from
	// before 2023 refuse it on kernels from 6.0 (they take any network
	// namespace for the host's).
	networks bool
}

// runscDate is the build date in runsc's version ("0.0~20221219.0",
// "release-20240513.0").
var runscDate = regexp.MustCompile(`(20\d{6})`)

// CheckRunsc says why runsc, as o configures it, cannot run sandboxes on
// this host (nil: it can), without keeping anything: for a configuration
// check before the daemon runs.
func CheckRunsc(o RunscOptions) error {
	_, err := findRunsc(o)
	return err
}

// newRunsc finds runsc and checks it runs, with its state under stateDir.
func newRunsc(o RunscOptions, stateDir string) (*runsc, error) {
	rs, err := findRunsc(o)
	if err != nil {
		return nil, err
	}
	rs.root = filepath.Join(stateDir, "runsc")
	// Host sockets: the agent creates its own in the folder bound at
	// agentDir, and code of a session with an MCP gateway opens the
	// gateway's (the only host sockets a sandbox's mounts hold, as under
	// runc).
	rs.flags = append([]string{"--root", rs.root, "--platform", rs.platform, "--host-uds", "all", "--ignore-cgroups", "--oci-seccomp"}, o.Flags...)
	if err := os.MkdirAll(rs.root, 0o700); err != nil {
		return nil, err
	}
	return rs, nil
}

// findRunsc finds runsc, checks its platform can work here and that it
// runs, and learns its version.
func findRunsc(o RunscOptions) (*runsc, error) {
	path := o.Path
	if path == "" {
		path = "runsc"
	}
	p, err := exec.LookPath(path)
	if err != nil {
		return nil, fmt.Errorf("runsc is not installed (%v): install the runsc package (gVisor)", err)
	}
	platform := o.Platform
	if platform == "" {
		platform = "ptrace"
	}
	if err := checkPlatform(platform); err != nil {
		return nil, err
	}
	out, err := exec.Command(p, "--version").CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("%s --version: %v: %s", p, err, firstLine(out))
	}
	rs := &runsc{
		path: p, platform: platform,
		version: strings.TrimPrefix(firstLine(out), "runsc version "), networks: true,
	}
	if m := runscDate.FindString(rs.version); m != "" && m < "20230101" && kernelAtLeast(6) {
		rs.networks = false
	}
	return rs, nil
}

// checkPlatform says whether gVisor's platform can run on this host.
func checkPlatform(platform string) error {
	switch platform {
	case "ptrace", "systrap":
		return nil
	case "kvm":
		cpu, _ := os.ReadFile("/proc/cpuinfo")
		if !bytes.Contains(cpu, []byte(" vmx")) && !bytes.Contains(cpu, []byte(" svm")) {
			return errors.New("runsc's kvm platform needs hardware virtualization, which this host's CPU does not offer: set [runsc] platform = \"ptrace\"")
		}
		f, err := os.OpenFile("/dev/kvm", os.O_RDWR, 0)
		if err != nil {
			return fmt.Errorf("runsc's kvm platform needs /dev/kvm: %v", err)
		}
		return f.Close()
	}
	return fmt.Errorf("unknown runsc platform %q: use ptrace, systrap or kvm", platform)
}

// kernelAtLeast says the host's kernel is of major version v or later.
func kernelAtLeast(v int) bool {
	var u unix.Utsname
	if unix.Uname(&u) != nil {
		return false
	}
	major, _, _ := strings.Cut(unix.ByteSliceToString(u.Release[:]), ".")
	n, err := strconv.Atoi(major)
	return err == nil && n >= v
}

func firstLine(b []byte) string {
	l, _, _ := strings.Cut(strings.TrimSpace(string(b)), "\n")
	return l
}

// runscTimeout bounds every runsc call: one that hangs (a sandbox that
// never signals its start) fails the start or the delete instead of
// holding the daemon's goroutine for good.
const runscTimeout = 30 * time.Second

// The --network of a runsc sandbox, the same in every call for it:
// gVisor's netstack on the links of the namespace the daemon made
// (Spec.NetNS), or none (only gVisor's loopback).
const (
	runscNetSandbox = "sandbox"
	runscNetNone    = "none"
)

// command is runsc with the global flags, the sandbox's network and args.
// The caller bounds it with ctx; its output goes to files, never pipes,
// for create: the gofer and sandbox processes it leaves running inherit
// it.
func (rs *runsc) command(ctx context.Context, network string, args ...string) *exec.Cmd {
	all := append(append([]string{}, rs.flags...), "--network", network)
	cmd := exec.CommandContext(ctx, rs.path, append(all, args...)...)
	cmd.WaitDelay = time.Second
	return cmd
}

// run runs a quick runsc command and returns its output, killed after
// runscTimeout; an error carries the output's last line (runsc says what
// went wrong there).
func (rs *runsc) run(network string, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), runscTimeout)
	defer cancel()
	out, err := rs.command(ctx, network, args...).CombinedOutput()
	if err != nil {
		return out, fmt.Errorf("runsc %s: %w: %s", args[0], err, lastLine(out))
	}
	return out, nil
}

func lastLine(b []byte) string {
	s := strings.TrimSpace(string(b))
	return s[strings.LastIndexByte(s, '\n')+1:]
}

// runscState is what `runsc state` says of a sandbox.
type runscState struct {
	Status string `json:"status"`
	Pid    int    `json:"pid"`
}

func (rs *runsc) state(id, network string) (*runscState, error) {
	out, err := rs.run(network, "state", id)
	if err != nil {
		return nil, err
	}
	var st runscState
	if err := json.Unmarshal(out, &st); err != nil {
		return nil, fmt.Errorf("runsc state %s: %w", id, err)
	}
	return &st, nil
}

// remove ends what is left of sandbox id (its gofer, or all of it) and
// removes runsc's state of it, and its cgroup. Not with `runsc delete`:
// that SIGKILLs the pids runsc recorded at create whether or not they are
// still its processes, and once the sandbox process has died (killed by
// the daemon, or by the OOM killer) another process on the host may have
// its pid. The cgroup knows which processes are the sandbox's.
func (rs *runsc) remove(id string, cg ocgroups.Manager) error {
	_ = cg.Freeze(ocgroups.Thawed) // a frozen task's SIGKILL waits for the thaw
	err := killAll(cg)
	m, _ := filepath.Glob(filepath.Join(rs.root, "*"+id+"*"))
	for _, f := range m {
		err = errors.Join(err, os.RemoveAll(f))
	}
	return errors.Join(err, retryBusy(cg.Destroy))
}

// runscSpec is the OCI spec of a runsc sandbox: runc's, with the agent as
// its process and the agent's folder bound from the host. The seccomp
// allowlist in gVisor's form (seccomp.GvisorProfile), which gVisor applies
// to the sandbox's processes inside (--oci-seccomp): the Sentry stands
// between the code and the host, but code must not do more under gVisor
// than under runc either (make namespaces of gVisor's own, say). Its
// monitored form is runc's alone: the refusals it reports are the host
// kernel's. Without device rules and
// lxcfs's /proc files (gVisor's devices and /proc are its own).
func (r *Runtime) runscSpec(s *Spec, p *paths, view *Image) *specs.Spec {
	spec := r.ociSpec(s, p, view)
	spec.Linux.Seccomp = r.gvisorSeccomp
	host := s.Limits.gvisorResources()
	spec.Linux.Resources.Memory, spec.Linux.Resources.Pids = host.Memory, host.Pids
	if s.Limits.Pids > 0 {
		// gVisor keeps the session's pids limit inside: tasks of the
		// sandbox's user, which every process in it runs as.
		n := uint64(s.Limits.Pids)
		spec.Process.Rlimits = append(spec.Process.Rlimits, specs.POSIXRlimit{Type: "RLIMIT_NPROC", Hard: n, Soft: n})
	}
	spec.Linux.Resources.Devices = nil
	spec.Mounts = append(spec.Mounts, specs.Mount{Destination: agentDir, Type: "bind", Source: p.agent, Options: bindRW})
	spec.Process.Args = agentArgs(view.python, s.Preload)
	spec.Process.Env = sandboxEnv(s)
	spec.Process.Cwd = "/workspace"
	spec.Process.User = specs.User{UID: uint32(r.UID()), GID: uint32(r.GID())}
	spec.Annotations = map[string]string{runscNetworkKey: runscNetwork(s)}
	return spec
}

// runscNetworkKey is the annotation of a runsc sandbox's config.json that
// keeps its --network, for the calls of a daemon that restored it.
const runscNetworkKey = "dev.sandboxd.runsc.network"

// runscNetwork is the --network of sandbox s.
func runscNetwork(s *Spec) string {
	if s.NetNS != "" {
		return runscNetSandbox
	}
	return runscNetNone
}

// launchRunsc starts sandbox s with runsc: a bundle in its folder, runsc
// create and start. The agent makes its socket in p.agent.
func (r *Runtime) launchRunsc(_ context.Context, s *Spec, p *paths, view *Image, logf *os.File, t0 time.Time) (_ *Sandbox, retErr error) {
	rs := r.runsc
	uid, gid := r.HostOwner(s.IDBase)
	if r.userns {
		if err := searchable(p.dir, s.Workspace); err != nil {
			return nil, err
		}
	}
	if err := os.Mkdir(p.agent, 0o700); err != nil {
		return nil, err
	}
	if err := os.Chown(p.agent, uid, gid); err != nil {
		return nil, err
	}
	spec := r.runscSpec(s, p, view)
	b, err := json.Marshal(spec)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(p.dir, "config.json"), b, 0o600); err != nil {
		return nil, err
	}
	// The daemon makes the sandbox's cgroup and sets its limits, as
	// libcontainer does for runc (the parents of a v1 cpuset need their
	// CPUs copied down), and starts runsc in it (startIn): runsc, told to
	// leave cgroups alone, forks its gofer and sandbox there.
	cg, err := r.runscCgroup(s.ID, spec.Linux.Resources)
	if err != nil {
		return nil, err
	}
	if err := cg.Apply(-1); err != nil {
		_ = cg.Destroy()
		return nil, fmt.Errorf("sandbox cgroup: %w", err)
	}
	release := limitsGate()
	res := resourcesOf(cg)
	err = cg.Set(&res)
	release(err == nil)
	if err != nil {
		_ = cg.Destroy()
		return nil, fmt.Errorf("sandbox limits: %w", err)
	}
	pidFile := filepath.Join(p.dir, "runsc.pid")
	t1 := time.Now()
	cctx, cancel := context.WithTimeout(context.Background(), runscTimeout)
	defer cancel()
	network := runscNetwork(s)
	create := rs.command(cctx, network, "create", "--bundle", p.dir, "--pid-file", pidFile, s.ID)
	create.Stdout, create.Stderr = logf, logf
	defer func() {
		if retErr != nil {
			_ = rs.remove(s.ID, cg)
			_ = r.cgroups.RemoveSandbox(s.ID)
		}
	}()
	err = startIn(create, cg)
	if err == nil {
		err = create.Wait()
	}
	if err != nil {
		return nil, fmt.Errorf("runsc create: %w%s", err, tailOf(p.log))
	}
	c, err := r.runscContainer(s.ID, pidFile, cg, spec)
	if err != nil {
		return nil, err
	}
	sb := r.newSandbox(s, c)
	sb.Timings.Prepare = t1.Sub(t0)
	if _, err := rs.run(c.network, "start", s.ID); err != nil {
		c.close()
		return nil, err
	}
	sb.started = time.Now()
	if err := sb.watch(c, s.Limits); err != nil {
		c.close()
		return nil, err
	}
	return sb, nil
}

// tailOf is the end of a log file, for an error message.
func tailOf(path string) string {
	b, _ := os.ReadFile(path)
	if len(b) == 0 {
		return ""
	}
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return ": " + string(bytes.TrimSpace(b))
}

// restoreRunsc takes back a runsc sandbox a previous daemon left running.
func (r *Runtime) restoreRunsc(s *Spec) (*Sandbox, error) {
	if r.runsc == nil {
		return nil, fmt.Errorf("runsc is not usable on this host: %s", r.runscProblem)
	}
	p := r.pathsOf(s.ID)
	b, err := os.ReadFile(filepath.Join(p.dir, "config.json"))
	if err != nil {
		return nil, err
	}
	var spec specs.Spec
	if err := json.Unmarshal(b, &spec); err != nil {
		return nil, err
	}
	cg, err := r.runscCgroup(s.ID, spec.Linux.Resources)
	if err != nil {
		return nil, err
	}
	// A paused sandbox is thawed first: runsc's own commands talk to its
	// Sentry, which would not answer frozen (the caller freezes it again).
	if err := cg.Freeze(ocgroups.Thawed); err != nil {
		return nil, fmt.Errorf("thaw sandbox: %w", err)
	}
	c, err := r.runscContainer(s.ID, "", cg, &spec)
	if err != nil {
		return nil, err
	}
	if set := c.res.CpusetCpus; set != "" {
		r.cpus.adopt(s.ID, set)
	}
	sb := r.newSandbox(s, c)
	if fi, err := os.Stat(filepath.Join(p.dir, "runsc.pid")); err == nil {
		sb.started = fi.ModTime()
	}
	if err := sb.watch(c, s.Limits); err != nil {
		c.close()
		return nil, err
	}
	return sb, nil
}

// runscInfo describes the runsc runtime for Info.
func (r *Runtime) runscInfo() RuntimeInfo {
	if r.runsc == nil {
		return RuntimeInfo{Name: RuntimeRunsc, Problem: r.runscProblem}
	}
	return RuntimeInfo{Name: RuntimeRunsc, Usable: true, Version: r.runsc.version, Platform: r.runsc.platform, Networks: r.runsc.networks, NetworkAtStart: true}
}

// searchable checks that every folder above each path lets anyone through
// (o+x): runsc's gofer, in the sandbox's user namespace, is a stranger to
// the host's folders, and opens the sandbox's mounts by path. (runc's
// container opens them as root, before it enters the namespace.)
func searchable(paths ...string) error {
	for _, p := range paths {
		for d := filepath.Dir(p); ; d = filepath.Dir(d) {
			fi, err := os.Stat(d)
			if err != nil {
				return err
			}
			if fi.Mode().Perm()&0o001 == 0 {
				return fmt.Errorf("runsc sandboxes with user namespaces need the folders above their files searchable by all users, and %s is not: chmod o+x %s (or move run_dir or data_dir)", d, d)
			}
			if d == "/" {
				break
			}
		}
	}
	return nil
}

// close unmounts what runsc leaves in its root: newer builds bind the
// network namespace of their sandboxes without a network there.
func (rs *runsc) close() error {
	err := unix.Unmount(filepath.Join(rs.root, "null-netns"), unix.MNT_DETACH|unix.UMOUNT_NOFOLLOW)
	if err == unix.EINVAL || err == unix.ENOENT {
		return nil
	}
	return err
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
func (l Limits) gvisorResources() *specs.LinuxResources {
	res := l.resources()
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

// sealAgentDir makes a runsc sandbox's agent folder root's once its agent
// listens there. The agent made its socket in it as the sandbox's user,
// which code runs as too: code could not connect to it (gVisor refuses a
// connection from inside to a socket of the host's), but could rename it
// and listen in its place, for the daemon to find after a restart. A
// folder of root's, 0700, is closed to the sandbox's user on the host,
// whatever gVisor remembers of it. runc sandboxes have no such folder.
func sealAgentDir(p *paths) error {
	if filepath.Dir(p.sock) != p.agent {
		return nil
	}
	if err := os.Chown(p.agent, 0, 0); err != nil {
		return fmt.Errorf("agent folder: %w", err)
	}
	return nil
}
