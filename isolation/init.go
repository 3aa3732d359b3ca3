// Package isolation builds and runs sandboxes: one container per session,
// with its own mount, pid, ipc, uts, cgroup and network namespaces, a
// read-only view of the host's system folders, a private writable
// /workspace and /tmp, no capabilities, no_new_privs and the seccomp profile
// of package seccomp.
//
// It holds what is the same for every runtime: the Spec and the contract's
// types, the root view, the OCI spec, and the Sandbox around a container —
// the agent's connection, executions, interrupts, limits, meters,
// leftovers. A runtime's engine starts the container (Engine, Container):
// runc's libcontainer in package isolation/runc, gVisor's runsc in package
// isolation/runsc. The caller hands the engines in (Options.Engines), so
// this package imports neither.
package isolation

import (
	"runtime"

	// Container init: libcontainer re-executes this binary to start each
	// sandbox.
	_ "github.com/sandboxd/sandboxd/isolation/selfinit"
)

// init keeps the process's main thread to the main goroutine. (Package
// selfinit, imported above, has made any binary that links this package —
// sandboxd and every test binary that starts sandboxes — its own
// libcontainer init, before main and before TestMain, as libcontainer
// requires.)
//
// To make a sandbox's mount sources libcontainer locks a goroutine to its
// thread and moves that thread into the new sandbox's mount namespace,
// counting on Go to end the thread when the goroutine returns. Go ends any thread so
// left but the main one, which it parks instead: a process whose main
// thread ran that goroutine stayed in that sandbox's mount namespace for
// good, and kept the sandbox's disk mounted (its loop device with it) long
// after the sandbox was deleted (TestDeadPooledSandboxes in the VM, about
// one run in ten). Locked here, in an init, the main thread runs main
// and nothing else.
func init() {
	runtime.LockOSThread()
}
