// Package isolation builds and runs sandboxes with runc's libcontainer: one
// container per session, with its own mount, pid, ipc, uts, cgroup and
// network namespaces, a read-only view of the host's system folders, a
// private writable /workspace and /tmp, no capabilities, no_new_privs and the
// seccomp profile of package seccomp.
package isolation

import (
	"os"

	"github.com/opencontainers/runc/libcontainer"

	// Lets libcontainer's cgroup managers apply device rules.
	_ "github.com/opencontainers/cgroups/devices"
	// The C half of container init: joins namespaces before Go starts.
	_ "github.com/opencontainers/runc/libcontainer/nsenter"
)

// initArg is how libcontainer re-executes the daemon binary as the
// container's init.
const initArg = "init"

// init turns any binary that links this package — sandboxd and every test
// binary that starts sandboxes — into its own libcontainer init. It runs
// before main (and before TestMain), as libcontainer requires.
func init() {
	if len(os.Args) > 1 && os.Args[1] == initArg {
		libcontainer.Init()
	}
}
