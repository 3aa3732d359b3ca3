package agent

import (
	"context"
	"fmt"
	"os/exec"
	"path"
	"strconv"
	"strings"
	"time"
)

// SupervisorBinary is the native supervisor's name (supervisor/, C, built
// by supervisor/build.sh): PID 1 of a sandbox in the Python supervisor's
// place (python/_sandboxd_agent.py), speaking the same protocol to the
// daemon and running the same worker, exec'd rather than forked, so that a
// session holds one interpreter, not two (docs/performance.md, round 3).
// The runtime installs it in Dir beside the modules.
const SupervisorBinary = "sandboxd-supervisor"

// SupervisorIdentity is what a native supervisor built with this daemon's
// agent prints for --version; another build's is not taken (its worker,
// this daemon's, might not be the one it speaks to).
func SupervisorIdentity() string {
	return SupervisorBinary + " " + strconv.Itoa(Revision)
}

// CheckSupervisor runs the native supervisor at p with --version and
// returns an error unless it is this build's (SupervisorIdentity).
func CheckSupervisor(ctx context.Context, p string) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, p, "--version").Output()
	if err != nil {
		return fmt.Errorf("%s --version: %w", p, err)
	}
	if got := strings.TrimSpace(string(out)); got != SupervisorIdentity() {
		return fmt.Errorf("%s is another build's (%q, not %q)", p, got, SupervisorIdentity())
	}
	return nil
}

// SupervisorArgs starts the native supervisor installed in Dir, with the
// sandbox's python (the worker's interpreter) and the template's preload
// code, if any.
func SupervisorArgs(python, preload string) []string {
	args := []string{path.Join(Dir, SupervisorBinary), python, Dir}
	if preload != "" {
		args = append(args, preload)
	}
	return args
}

// PythonOf is the sandbox's python in the agent's command line args (a
// container spec's process): the native supervisor's first argument, or
// the Python supervisor's interpreter itself.
func PythonOf(args []string) string {
	if len(args) > 1 && path.Base(args[0]) == SupervisorBinary {
		return args[1]
	}
	if len(args) == 0 {
		return ""
	}
	return args[0]
}
