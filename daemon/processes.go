package daemon

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/containerd/errdefs"
	"golang.org/x/sys/unix"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/daemon/sandboxfs"
	"github.com/sandboxd/sandboxd/internal/logging"
	"github.com/sandboxd/sandboxd/isolation"
)

// Background processes (exec --detach): a command that outlives its call,
// in the sandbox's cgroup (its pids limit counts it) until it exits or the
// session stops. Its stdout and stderr go to a file in the sandbox's
// /tmp (on the session's disk, so its quota bounds it), named by its pid,
// which the daemon serves; the process holds the file itself, so a daemon
// restart does not cut its output.

// logsDir is where detached processes' output goes, under /tmp.
const logsDir = ".sandboxd/logs"

// procSeq names a log file until its process's pid is known.
var procSeq atomic.Uint64

// detachedProc is what the daemon knows of a detached process.
type detachedProc struct {
	exit *int // set once it ended
}

// StartProcess starts a command in the background.
func (d *Daemon) StartProcess(ctx context.Context, id string, req *api.ProcessRequest) (*api.Process, error) {
	cwd, err := checkCommand(req.Argv, req.Env, req.Cwd)
	if err != nil {
		return nil, err
	}
	s, err := d.lookupAwake(ctx, id)
	if err != nil {
		return nil, err
	}
	sb := s.Sandbox()
	if sb == nil {
		return nil, api.Errorf(errdefs.ErrConflict, "session %s is not running: start it first", s.ID())
	}
	fs := d.sessionFS(s)
	tmpName := fmt.Sprintf("%s/.starting-%d.log", logsDir, procSeq.Add(1))
	out, err := fs.Create(sandboxfs.Tmp, tmpName)
	if err != nil {
		return nil, err
	}
	defer out.Close() // the process has its own copy
	env := envList(mergeEnv(s.Snapshot().Env, req.Env))
	// With the session's environment too: a detached command that cannot
	// be exec'd would only exit 255 later, with nothing in its log.
	if err := checkExecSize(req.Argv, env); err != nil {
		_ = fs.Remove(sandboxfs.Tmp, tmpName)
		return nil, err
	}
	p, err := sb.Spawn(&isolation.ProcessOptions{Argv: req.Argv, Env: env, Cwd: cwd, Output: out})
	if err != nil {
		_ = fs.Remove(sandboxfs.Tmp, tmpName)
		return nil, api.Errorf(errdefs.ErrInvalidArgument, "cannot run %s: %v", api.Quote(req.Argv[0]), err)
	}
	pid := p.PID()
	if pid > 0 {
		_ = fs.Rename(sandboxfs.Tmp, tmpName, strconv.Itoa(pid)+".log")
	}
	rec := &detachedProc{}
	s.mu.Lock()
	if s.detached == nil {
		s.detached = map[int]*detachedProc{}
	}
	s.detached[pid] = rec
	s.mu.Unlock()
	log := logging.From(ctx).With("session", sb.ID())
	log.Info("process started in the background", "pid", pid, "argv0", req.Argv[0])
	// Its end is noted (this daemon's child); one that outlives the
	// daemon is the next one's to see in the process list.
	go func() {
		code, _ := p.Wait()
		s.mu.Lock()
		rec.exit = &code
		s.mu.Unlock()
		log.Info("background process ended", "pid", pid, "exit_code", code)
	}()
	return &api.Process{PID: pid, Command: strings.Join(req.Argv, " "), StartedAt: now(), Detached: true}, nil
}

// checkCommand checks a command to run as is, and says its working folder.
func checkCommand(argv []string, env map[string]string, cwd string) (string, error) {
	if len(argv) == 0 || argv[0] == "" {
		return "", errdefs.ErrInvalidArgument.WithMessage("argv is required: the command and its arguments, e.g. [\"bash\"]")
	}
	n := 0
	for _, a := range argv {
		if strings.IndexByte(a, 0) >= 0 {
			return "", errdefs.ErrInvalidArgument.WithMessage("an argument contains a NUL byte")
		}
		n += len(a)
	}
	if n > maxCodeBytes {
		return "", api.Errorf(api.ErrPayloadTooLarge, "the command is %d bytes, over the limit of %d", n, maxCodeBytes)
	}
	if err := checkEnv(env); err != nil {
		return "", err
	}
	if err := checkExecSize(argv, envList(env)); err != nil {
		return "", err
	}
	if cwd == "" {
		return "/workspace", nil
	}
	return sandboxfs.Cwd(cwd)
}

// maxArgStrlen is Linux's MAX_ARG_STRLEN (32 pages): the most bytes of
// one argument or environment string, its NUL included.
const maxArgStrlen = 32 * 4096

// execHeadroom is what checkExecSize leaves for the sandbox's own
// environment (PATH, HOME, ...) and the program's path, which the daemon
// does not count.
const execHeadroom = 16 << 10

// checkExecSize refuses a command the kernel would refuse to exec
// (E2BIG): an argument or environment string over MAX_ARG_STRLEN, or all
// of them with their pointers over the exec limit. Such a command never
// starts: run in the background it would be a pid that exits 255 with an
// empty log, attached a broken stream; the caller's to fix, a 400.
func checkExecSize(argv, env []string) error {
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

// Processes lists a session's processes (its agent, pid 1, included).
func (d *Daemon) Processes(ctx context.Context, id string) ([]api.Process, error) {
	s, err := d.lookup(ctx, id)
	if err != nil {
		return nil, err
	}
	sb := s.Sandbox()
	if sb == nil {
		return nil, api.Errorf(errdefs.ErrConflict, "session %s is not running: it has no processes", s.ID())
	}
	ps, err := sb.Processes()
	if err != nil {
		return nil, err
	}
	out := make([]api.Process, 0, len(ps))
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range ps {
		_, detached := s.detached[p.PID]
		out = append(out, api.Process{PID: p.PID, PPID: p.PPID, Command: p.Command, StartedAt: p.StartedAt,
			CPUSeconds: p.CPUSeconds, RSSBytes: p.RSSBytes, Detached: detached})
	}
	return out, nil
}

// SignalProcess sends a signal ("TERM", "KILL", "INT", "HUP", a number) to a
// session's process; its agent (pid 1) is refused.
func (d *Daemon) SignalProcess(ctx context.Context, id string, pid int, signal string) error {
	sig, err := parseSignal(signal)
	if err != nil {
		return err
	}
	if pid == 1 {
		return errdefs.ErrInvalidArgument.WithMessage("pid 1 is the sandbox's agent: stop or restart the session instead")
	}
	s, err := d.lookupAwake(ctx, id)
	if err != nil {
		return err
	}
	sb := s.Sandbox()
	if sb == nil {
		return api.Errorf(errdefs.ErrConflict, "session %s is not running", s.ID())
	}
	err = sb.Signal(pid, sig)
	if errors.Is(err, isolation.ErrNoProcess) {
		return api.Errorf(errdefs.ErrNotFound, "no process %d in session %s", pid, s.ID())
	}
	return err
}

// parseSignal reads a signal's name or number.
func parseSignal(s string) (unix.Signal, error) {
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

// ProcessLogs opens a detached process's output from offset, and says
// whether it still runs (false also when this daemon did not start it and
// it is gone from the sandbox).
func (d *Daemon) ProcessLogs(ctx context.Context, id string, pid int, offset int64) (io.ReadCloser, bool, *int, error) {
	s, err := d.lookup(ctx, id)
	if err != nil {
		return nil, false, nil, err
	}
	sb := s.Sandbox()
	if sb == nil {
		return nil, false, nil, api.Errorf(errdefs.ErrConflict, "session %s is not running: its processes' output went with its /tmp", s.ID())
	}
	f, err := d.sessionFS(s).Open(sandboxfs.Tmp, fmt.Sprintf("%s/%d.log", logsDir, pid))
	if err != nil {
		if errdefs.IsNotFound(err) {
			return nil, false, nil, api.Errorf(errdefs.ErrNotFound, "no output of process %d in session %s: it was not started in the background (exec --detach)", pid, s.ID())
		}
		return nil, false, nil, err
	}
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		f.Close()
		return nil, false, nil, api.Errorf(errdefs.ErrNotFound, "no output of process %d", pid)
	}
	if offset > 0 {
		if _, err := f.Seek(offset, io.SeekStart); err != nil {
			f.Close()
			return nil, false, nil, err
		}
	}
	s.mu.Lock()
	rec := s.detached[pid]
	var exit *int
	if rec != nil {
		exit = rec.exit
	}
	s.mu.Unlock()
	// One this daemon started runs until its Wait returns; another (from
	// before a restart) runs while the sandbox lists it.
	running := rec != nil && exit == nil
	if rec == nil {
		if ps, err := sb.Processes(); err == nil {
			for _, p := range ps {
				running = running || p.PID == pid
			}
		}
	}
	return f, running, exit, nil
}
