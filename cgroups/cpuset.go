package cgroups

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// CPUSet says sandboxes' cgroups may be given a cpuset: on v1 the cpuset
// hierarchy is mounted, on v2 the controller is enabled where sandboxes go
// (Setup asks for it; a parent that does not delegate it leaves it out).
// Without it a sandbox runs on every CPU of the host, and nproc says so.
func (t *Tree) CPUSet() bool {
	if t.Version == 1 {
		_, err := os.Stat(filepath.Join(unifiedMount, "cpuset", "cpuset.cpus"))
		return err == nil
	}
	b, err := os.ReadFile(filepath.Join(unifiedMount, t.Parent, "cgroup.subtree_control"))
	return err == nil && slices.Contains(strings.Fields(string(b)), "cpuset")
}
