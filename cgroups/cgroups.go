// Package cgroups owns where sandbox cgroups live and what limits they get.
//
// Who owns what:
//   - this package detects the hierarchy (containerd/cgroups/v3) and, on v2,
//     prepares a delegated subtree: a systemd scope beside the service when
//     the daemon is a systemd service (scope.go), else the daemon's own
//     cgroup, where it moves the daemon into a leaf ("daemon"). Either way
//     it enables controllers for the daemon's sandbox folder ("sandboxes"
//     in a scope, the daemon's own name else), so no cgroup has both
//     processes and children (the v2 no-internal-process rule), and writes
//     nothing outside the subtree.
//   - libcontainer, through opencontainers/cgroups, creates, limits, reads and
//     removes each sandbox's own cgroup; this package only hands it the path
//     and the resources (Resources) and reads its stats back (Usage).
//
// v2 is first class. v1 is the fallback: there each controller has its own
// tree, so a sandbox path is relative ("sandboxd/ID") and libcontainer nests
// it below the daemon's own cgroup in every controller. Nothing is ever made
// above the daemon's own cgroup.
package cgroups

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"

	ocgroups "github.com/opencontainers/cgroups"
	"golang.org/x/sys/unix"

	cgroupsv3 "github.com/containerd/cgroups/v3"
	"github.com/containerd/cgroups/v3/cgroup2"
)

// Version is the cgroup version in use: 1 or 2.
type Version int

// Detect tells which cgroup hierarchy the host runs. Hybrid hosts are driven
// as v1, since the controllers live there.
func Detect() Version {
	if cgroupsv3.Mode() == cgroupsv3.Unified {
		return 2
	}
	return 1
}

// Tree is where this daemon puts sandbox cgroups.
type Tree struct {
	Version Version
	// Parent is the folder sandbox cgroups go in: an absolute cgroup path on
	// v2, a path relative to the daemon's own cgroup on v1.
	Parent string
	// Scope is the systemd scope holding Parent, when there is one (see
	// scope.go).
	Scope string
}

// controllers the sandboxes need on v2; cpuset only where the parent
// delegates it (see CPUSet).
var controllers = []string{"cpu", "cpuset", "memory", "pids"}

// Setup finds (and on v2 prepares) where sandbox cgroups go. name is the
// daemon's own folder for sandboxes below its cgroup (on v1 in every
// hierarchy), e.g. "sandboxd-<instance>": each daemon on a host has its
// own, so none ever sees (or sweeps) another's sandboxes. service says the daemon is
// a systemd service's main process: on v2 sandboxes then go in a delegated
// scope beside it (scope.go), else in the daemon's own subtree.
func Setup(ctx context.Context, name string, service bool, log *slog.Logger) (*Tree, error) {
	if Detect() == 1 {
		return &Tree{Version: 1, Parent: name}, nil
	}
	own, err := cgroup2.NestedGroupPath("")
	if err != nil {
		return nil, fmt.Errorf("find own cgroup: %w", err)
	}
	if service {
		t, err := setupScope(ctx, own)
		if err == nil {
			return t, nil
		}
		// Without systemd's API sandboxes still run, in the unit's own
		// cgroup (Delegate=yes); they are stopped when it stops.
		log.Warn("cannot put sandboxes in a systemd scope: they go in the service's own cgroup and stop with it", "error", err)
	}
	// A restarted daemon finds itself already in the leaf.
	if path.Base(own) == "daemon" {
		own = path.Dir(own)
	}
	// Every process of our own cgroup moves into the leaf: usually that is
	// the daemon alone (a systemd unit with Delegate=yes), but a daemon
	// started by hand or by a test shares its cgroup with its parent. They
	// stay inside our own subtree.
	if err := prepare(own, "daemon", name); err != nil {
		return nil, err
	}
	return &Tree{Version: 2, Parent: path.Join(own, name)}, nil
}

// PathFor is the cgroup path libcontainer is given for a sandbox.
func (t *Tree) PathFor(id string) string { return path.Join(t.Parent, id) }

// Remove removes the daemon's sandbox folder once no sandbox is left in it;
// a folder still in use stays. It never touches anything else. On v1 that
// is one folder per hierarchy libcontainer used: every controller, the
// named systemd hierarchy, and the unified one of a hybrid host.
func (t *Tree) Remove() error {
	dirs, err := t.dirs()
	if err != nil {
		return err
	}
	var errs []error
	for _, d := range dirs {
		errs = append(errs, ignoreBusy(os.Remove(d)))
	}
	if t.Version == 2 {
		if _, err := os.Stat(dirs[0]); err == nil {
			return errors.Join(errs...) // sandboxes run on
		}
		if t.Scope != "" {
			errs = append(errs, stopScope(t.Scope))
		} else {
			errs = append(errs, t.releaseControllers())
		}
	}
	return errors.Join(errs...)
}

// releaseControllers turns the controllers Setup enabled in the daemon's
// own cgroup off again once no sandbox is left: under systemd without a
// scope, a restart puts the next daemon into the unit's cgroup, which the
// kernel refuses while its subtree_control is set (status=219/CGROUP).
func (t *Tree) releaseControllers() error {
	return ignoreBusy(toggle(filepath.Join(unifiedMount, path.Dir(t.Parent)), controllers, "-"))
}

// dirs is the daemon's sandbox folder in every hierarchy it uses.
func (t *Tree) dirs() ([]string, error) {
	if t.Version == 2 {
		return []string{path.Join(unifiedMount, t.Parent)}, nil
	}
	own, err := ocgroups.ParseCgroupFile("/proc/self/cgroup")
	if err != nil {
		return nil, err
	}
	folders, err := V1Folders(own)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, dir := range folders {
		out = append(out, filepath.Join(dir, t.Parent))
	}
	if p, ok := own[""]; ok && isCgroup2(hybridMount) {
		out = append(out, filepath.Join(hybridMount, p, t.Parent))
	}
	return out, nil
}

// V1Folders is, for the cgroups of a process or a thread (own, parsed
// from /proc/self/cgroup or /proc/thread-self/cgroup), its folder in each
// mounted v1 hierarchy, by the name /proc gives the hierarchy ("memory",
// "name=systemd"; co-mounted ones each have theirs).
func V1Folders(own map[string]string) (map[string]string, error) {
	mounts, err := ocgroups.GetCgroupMounts(true)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, m := range mounts {
		for _, sub := range m.Subsystems {
			// Named hierarchies: "systemd" in mountinfo, "name=systemd" in /proc.
			for _, name := range []string{sub, "name=" + sub} {
				p, ok := own[name]
				if !ok {
					continue
				}
				rel, err := filepath.Rel(m.Root, p)
				if err != nil || strings.HasPrefix(rel, "..") {
					continue
				}
				out[name] = filepath.Join(m.Mountpoint, rel)
			}
		}
	}
	return out, nil
}

// hybridMount is where hybrid hosts mount the unified hierarchy.
const hybridMount = "/sys/fs/cgroup/unified"

func isCgroup2(dir string) bool {
	var st unix.Statfs_t
	return unix.Statfs(dir, &st) == nil && st.Type == unix.CGROUP2_SUPER_MAGIC
}

const unifiedMount = "/sys/fs/cgroup"

func ignoreBusy(err error) error {
	if err == nil || errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.EBUSY) || errors.Is(err, syscall.ENOTEMPTY) {
		return nil
	}
	return err
}
