// Package selfinit turns the binary that links it into libcontainer's
// container init: libcontainer re-executes the daemon's own binary with
// the argument "init" to start each sandbox.
//
// It is a package of its own, importing nothing but libcontainer, so that
// Go initialises it as soon as libcontainer is: packages are initialised
// in import path order among those whose imports are, and as part of
// package isolation the call came after every package sorted before it
// (the Prometheus client's ~0.6 ms among them), on each sandbox's start.
package selfinit

import (
	"os"

	"github.com/opencontainers/runc/libcontainer"

	// Lets libcontainer's cgroup managers apply device rules.
	_ "github.com/opencontainers/cgroups/devices"
	// The C half of container init: joins namespaces before Go starts.
	_ "github.com/opencontainers/runc/libcontainer/nsenter"
)

// Arg is how libcontainer re-executes the binary as a container's init.
const Arg = "init"

func init() {
	if len(os.Args) > 1 && os.Args[1] == Arg {
		libcontainer.Init() // does not return
	}
}
