package runsc

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	ocgroups "github.com/opencontainers/cgroups"
	"golang.org/x/sys/unix"

	"github.com/sandboxd/sandboxd/isolation"
)

// The runsc binary, driven by its command line (see the package comment).

// Options configure the runsc runtime.
type Options struct {
	// Path is the runsc binary; "" looks for runsc on PATH.
	Path string
	// Platform is how gVisor traps the sandbox's system calls: ptrace
	// (works anywhere), systrap (newer builds), kvm (needs hardware
	// virtualization).
	Platform string
	// Flags are more global flags for every runsc call (e.g. "--debug").
	Flags []string
}

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
	// checkpoints says it saves a running sandbox's memory (checkpoint.go).
	checkpoints bool
}

// runscDate is the build date in runsc's version ("0.0~20221219.0",
// "release-20240513.0").
var runscDate = regexp.MustCompile(`(20\d{6})`)

// Check says why runsc, as o configures it, cannot run sandboxes on this
// host (nil: it can), without keeping anything: for a configuration check
// before the daemon runs.
func Check(o Options) error {
	_, err := findRunsc(o)
	return err
}

// newRunsc finds runsc and checks it runs, with its state under stateDir.
func newRunsc(o Options, stateDir string) (*runsc, error) {
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
func findRunsc(o Options) (*runsc, error) {
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
	m := runscDate.FindString(rs.version)
	if m != "" && m < "20230101" && kernelAtLeast(6) {
		rs.networks = false
	}
	// gVisor's checkpoint file, which the agent waits on for the end of a
	// checkpoint (agent.CheckpointPath), is in builds from 2025 (the one
	// make builds has it; Debian 12's, from 2022, has not). A build
	// without it is refused by the agent, whatever its date says.
	rs.checkpoints = m >= "20250101"
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
	return rs.runCtx(context.Background(), network, args...)
}

// runCtx is run within ctx too.
func (rs *runsc) runCtx(ctx context.Context, network string, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, runscTimeout)
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
	return errors.Join(err, isolation.RetryBusy(cg.Destroy))
}

// runscNetworkKey is the annotation of a runsc sandbox's config.json that
// keeps its --network, for the calls of a daemon that restored it.
const runscNetworkKey = "dev.sandboxd.runsc.network"

// runscNetwork is the --network of sandbox s.
func runscNetwork(s *isolation.Spec) string {
	if s.NetNS != "" {
		return runscNetSandbox
	}
	return runscNetNone
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
