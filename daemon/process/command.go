package process

import (
	"strconv"
	"strings"

	"github.com/containerd/errdefs"
	"golang.org/x/sys/unix"

	"github.com/sandboxd/sandboxd/api"
)

// maxArgStrlen is Linux's MAX_ARG_STRLEN (32 pages): the most bytes of
// one argument or environment string, its NUL included.
const maxArgStrlen = 32 * 4096

// execHeadroom is what checkExecSize leaves for the sandbox's own
// environment (PATH, HOME, ...) and the program's path, which the daemon
// does not count.
const execHeadroom = 16 << 10

// CheckExecSize refuses a command the kernel would refuse to exec
// (E2BIG): an argument or environment string over MAX_ARG_STRLEN, or all
// of them with their pointers over the exec limit. Such a command never
// starts: run in the background it would be a pid that exits 255 with an
// empty log, attached a broken stream; the caller's to fix, a 400.
func CheckExecSize(argv, env []string) error {
	total := 0
	for i, a := range argv {
		if len(a) >= maxArgStrlen {
			return api.Errorf(errdefs.ErrInvalidArgument, "argument %d is %d bytes: Linux runs no command with an argument over %d bytes (E2BIG); pass it in a file or on stdin", i, len(a), maxArgStrlen-1)
		}
		total += len(a) + 1 + 8
	}
	for _, kv := range env {
		if len(kv) >= maxArgStrlen {
			k, _, _ := strings.Cut(kv, "=")
			return api.Errorf(errdefs.ErrInvalidArgument, "environment variable %s is %d bytes: Linux runs no command with one over %d bytes (E2BIG); pass it in a file", api.Quote(k), len(kv), maxArgStrlen-1)
		}
		total += len(kv) + 1 + 8
	}
	if limit := execLimit() - execHeadroom; total > limit {
		return api.Errorf(errdefs.ErrInvalidArgument, "the command's arguments and environment are %d bytes: over the %d Linux runs a command with (E2BIG); pass them in a file or on stdin", total, limit)
	}
	return nil
}

// execLimit is the kernel's bound on an exec's arguments and environment
// together (strings and pointers): a quarter of the stack's limit, at
// most 6 MiB and at least 128 KiB. Sandboxes inherit the daemon's stack
// limit.
func execLimit() int {
	const most, least = 6 << 20, 32 * 4096
	var rl unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_STACK, &rl); err != nil || rl.Cur == unix.RLIM_INFINITY || rl.Cur/4 > most {
		return most
	}
	return max(int(rl.Cur/4), least)
}

// ParseSignal reads a signal's name or number.
func ParseSignal(s string) (unix.Signal, error) {
	if s == "" {
		return unix.SIGTERM, nil
	}
	if n, err := strconv.Atoi(s); err == nil && n > 0 && n < 65 {
		return unix.Signal(n), nil
	}
	name := strings.ToUpper(s)
	if !strings.HasPrefix(name, "SIG") {
		name = "SIG" + name
	}
	if sig := unix.SignalNum(name); sig != 0 {
		return sig, nil
	}
	return 0, api.Errorf(errdefs.ErrInvalidArgument, "bad signal %s: give a name (TERM, KILL, INT, HUP) or a number", api.Quote(s))
}
