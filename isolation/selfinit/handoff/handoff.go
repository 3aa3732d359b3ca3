// Package handoff makes the daemon's container init a small binary of its
// own. libcontainer starts each sandbox by re-executing the daemon's
// binary as "ARGV0 init"; the daemon's binary runs every package's init
// (the Prometheus client, the MCP SDK, gVisor's control packages, ~190 in
// all) before package selfinit's, on every sandbox's start. Imported by
// cmd/sandboxd alone, this C constructor runs before anything else in
// that process — before runc's nsexec (unprioritized constructors run
// last) and before Go's runtime — and, when the daemon named an init
// binary as libcontainer's ARGV0 (isolation/runc.HandOffInit), executes
// it in place with the same arguments, environment and descriptors:
// sandboxd-init, which links libcontainer's init and nothing else.
package handoff

/*
#cgo CFLAGS: -Wall
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

// handoffPrefix is how isolation/runc.HandOffInit names the init binary:
// the daemon's sealed memory copy of it, /proc/PID/fd/N.
static const char handoffPrefix[] = "/proc/";

static void __attribute__((constructor(200))) sandboxd_handoff(int argc, char **argv, char **envp) {
	if (argc != 2 || strcmp(argv[1], "init") != 0 || getenv("_LIBCONTAINER_INITPIPE") == NULL)
		return;
	if (strncmp(argv[0], handoffPrefix, sizeof(handoffPrefix) - 1) != 0)
		return;
	execve(argv[0], argv, envp);
	// Not executed: this binary's own init (package selfinit) runs as
	// before.
}
*/
import "C"
