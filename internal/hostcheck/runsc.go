package hostcheck

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/sandboxd/sandboxd/api"
)

// runscProbeTimeout bounds the platform probe: a platform that cannot
// work here (kvm without hardware virtualization) hangs rather than fails.
const runscProbeTimeout = 15 * time.Second

// Runsc reports whether gVisor's runsc is installed and runs a sandbox on
// the chosen platform: `runsc do true` in a state folder of its own, with
// no network and no cgroup.
func (h Host) Runsc() Result {
	const name = "gVisor (runsc)"
	path := h.RunscPath
	if path == "" {
		path = "runsc"
	}
	bin, err := exec.LookPath(path)
	if err != nil {
		return Result{name, Info, "not installed: sessions use runc (namespaces, cgroups, seccomp); install the runsc package for runtime \"runsc\""}
	}
	platform := h.RunscPlatform
	if platform == "" {
		platform = "ptrace"
	}
	out, err := exec.Command(bin, "--version").CombinedOutput()
	version := strings.TrimPrefix(firstLine(string(out)), "runsc version ")
	if err != nil {
		return Result{name, Warn, fmt.Sprintf("%s does not run: %v", bin, err)}
	}
	took, err := probeRunsc(bin, platform)
	if err != nil {
		return Result{name, Warn, fmt.Sprintf("%s (%s) cannot run a sandbox on platform %s: %v", bin, version, platform, err)}
	}
	return Result{name, OK, fmt.Sprintf("%s (%s): a sandbox on platform %s ran in %d ms", bin, version, platform, took.Milliseconds())}
}

// probeRunsc runs `runsc do true` and says how long it took.
func probeRunsc(bin, platform string) (time.Duration, error) {
	if os.Geteuid() != 0 {
		return 0, errors.New("checking it needs root")
	}
	root, err := os.MkdirTemp("", "sandboxctl-doctor-runsc-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(root)
	ctx, cancel := context.WithTimeout(context.Background(), runscProbeTimeout)
	defer cancel()
	// --ignore-cgroups: runsc's own cgroup, runsc-<pid>, would be made at
	// the root of every hierarchy and never removed.
	cmd := exec.CommandContext(ctx, bin, "--root", root, "--platform", platform, "--network", "none", "--ignore-cgroups", "do", "true")
	// runsc's sandbox and gofer processes stay in its process group: a
	// hung probe is killed with all of them.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 2 * time.Second
	t0 := time.Now()
	out, err := cmd.CombinedOutput()
	took := time.Since(t0)
	switch {
	case ctx.Err() != nil:
		return 0, fmt.Errorf("it hung for %s (choose another [runsc] platform; kvm needs hardware virtualization)", runscProbeTimeout)
	case err != nil:
		return 0, fmt.Errorf("%v: %s", err, lastLine(string(out)))
	}
	return took, nil
}

// DaemonRuntimes reports the runtimes the running daemon found usable:
// what its sessions can ask for.
func DaemonRuntimes(info *api.Info) Result {
	const name = "runtimes (daemon)"
	var parts []string
	status := OK
	for _, rt := range info.Runtimes {
		s := rt.Name
		if rt.Name == info.Runtime {
			s += " (default)"
		}
		switch {
		case !rt.Usable:
			s += ": not usable: " + rt.Problem
			if rt.Name == info.Runtime {
				status = Fail
			} else if status == OK {
				status = Warn
			}
		case !rt.Networks && rt.Name == api.RuntimeRunsc:
			s += ": network \"none\" only (runsc builds before 2023 cannot run gVisor's network stack on Linux 6 and later: set [runsc] path to a newer one)"
		case !rt.Networks:
			s += ": network \"none\" only"
		}
		parts = append(parts, s)
	}
	if len(parts) == 0 {
		return Result{name, Info, "the daemon does not list its runtimes (older than sandboxd's runsc support)"}
	}
	return Result{name, status, strings.Join(parts, "; ")}
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return l
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	return s[strings.LastIndexByte(s, '\n')+1:]
}

// RunscHugePages says whether gVisor backs its sandboxes' memory with the
// host's huge pages, as it decides at each start from the host's
// transparent huge page settings for shared memory (its memory file is a
// memfd): "always", "within_size" or "force", or "advise" with a defrag
// setting that does not stall an allocation ("always", "defer",
// "never"). Without them a runsc session's memory is paged in 4 KiB at a
// time, which a memory snapshot, a hibernate and every restore pay
// (docs/runsc.md, "Huge pages").
func (h Host) RunscHugePages() Result {
	const name = "runsc memory: huge pages"
	shmem, err := thpSetting(filepath.Join(h.Sys, "kernel/mm/transparent_hugepage/shmem_enabled"))
	if err != nil {
		return Result{name, Info, "cannot read the host's transparent huge page settings: " + err.Error()}
	}
	defrag, _ := thpSetting(filepath.Join(h.Sys, "kernel/mm/transparent_hugepage/defrag"))
	switch {
	case shmem == "always" || shmem == "within_size" || shmem == "force":
	case shmem == "advise" && (defrag == "always" || defrag == "defer" || defrag == "never"):
	default:
		return Result{name, Info, fmt.Sprintf("off (shmem_enabled %q, defrag %q): runsc sessions' memory snapshots, hibernates and restores page memory in 4 KiB at a time (on the reference host a snapshot paused its source ~3x and a restore took ~1.5x as long); shmem_enabled = within_size turns them on (docs/runsc.md, Huge pages)", shmem, defrag)}
	}
	return Result{name, OK, fmt.Sprintf("on (shmem_enabled %q, defrag %q)", shmem, defrag)}
}

// thpSetting is the selected value of a transparent huge page setting:
// the word in brackets of "always [madvise] never".
func thpSetting(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	for _, w := range strings.Fields(string(b)) {
		if len(w) > 2 && w[0] == '[' && w[len(w)-1] == ']' {
			return w[1 : len(w)-1], nil
		}
	}
	return "", fmt.Errorf("%s: no setting selected in %q", path, strings.TrimSpace(string(b)))
}
