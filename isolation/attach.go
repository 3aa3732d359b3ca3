package isolation

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/containerd/console"
	"github.com/opencontainers/runc/libcontainer"
	"github.com/opencontainers/runc/libcontainer/utils"
	"golang.org/x/sys/unix"
)

// ProcessOptions are a process to run in a sandbox beside its agent, its
// standard streams the caller's (docker's exec -i / -it).
type ProcessOptions struct {
	Argv []string
	// Env is added to the sandbox's own environment (its first process's).
	Env []string
	Cwd string
	// TTY gives it a pseudo-terminal of Rows x Cols.
	TTY        bool
	Rows, Cols uint16
	// UID and GID are the sandbox user's, set by Spawn.
	UID, GID int
	// Output, if set, takes the process's stdout and stderr, and its
	// input is empty: a process that outlives its caller (exec
	// --detach), its output in a file, no stream held by the daemon.
	Output *os.File
}

// Process is a process running in a sandbox: the same user, namespaces,
// cgroup (its limits count it), seccomp filter and no_new_privs as the
// agent. With a TTY, Stdin and Stdout are the terminal and Stderr is nil.
type Process struct {
	stdin          io.WriteCloser
	stdout, stderr io.ReadCloser

	resize func(rows, cols uint16) error
	wait   func() (int, error)
	kill   func() error
	// pid is its pid in the sandbox, for a detached one (0: unknown).
	pid int
}

// PID is the process's pid as the sandbox names it (0: unknown).
func (p *Process) PID() int { return p.pid }

// NewProcess is a Process of other making (another runtime's, a test's).
// resize may be nil (no terminal).
func NewProcess(stdin io.WriteCloser, stdout, stderr io.ReadCloser, resize func(rows, cols uint16) error, wait func() (int, error), kill func() error) *Process {
	return &Process{stdin: stdin, stdout: stdout, stderr: stderr, resize: resize, wait: wait, kill: kill}
}

// NewProcessWithPID is p, whose pid in the sandbox is pid.
func NewProcessWithPID(p *Process, pid int) *Process {
	p.pid = pid
	return p
}

// Stdin is the process's input; closing it ends the input (EOF).
func (p *Process) Stdin() io.WriteCloser { return p.stdin }

// Stdout is its output (with a terminal, everything it shows).
func (p *Process) Stdout() io.Reader { return p.stdout }

// Stderr is its error output, nil with a terminal.
func (p *Process) Stderr() io.Reader {
	if p.stderr == nil {
		return nil
	}
	return p.stderr
}

// Resize sets the terminal's size (no-op without one).
func (p *Process) Resize(rows, cols uint16) error {
	if p.resize == nil {
		return nil
	}
	return p.resize(rows, cols)
}

// Wait waits for the process to end and returns its exit status (128+N
// for a signal N). Its output may still be read after.
func (p *Process) Wait() (int, error) { return p.wait() }

// Kill ends the process (SIGKILL; under runsc, runsc exec's end).
func (p *Process) Kill() error { return p.kill() }

// Close lets go of its streams: a reader of its output gets an error.
func (p *Process) Close() {
	for _, c := range []io.Closer{p.stdin, p.stdout, p.stderr} {
		if c != nil {
			_ = c.Close()
		}
	}
}

// Spawn starts a process in the sandbox.
func (s *Sandbox) Spawn(o *ProcessOptions) (*Process, error) {
	if len(o.Argv) == 0 {
		return nil, errors.New("no command to run")
	}
	env := append(append([]string{}, s.env...), o.Env...)
	if o.TTY && !hasKey(env, "TERM") {
		env = append(env, "TERM=xterm-256color")
	}
	cwd := o.Cwd
	if cwd == "" {
		cwd = "/workspace"
	}
	oo := *o
	oo.Env, oo.Cwd, oo.UID, oo.GID = env, cwd, s.uid, s.gid
	return s.c.spawn(&oo)
}

func hasKey(env []string, key string) bool {
	for _, kv := range env {
		if k, _, _ := strings.Cut(kv, "="); k == key {
			return true
		}
	}
	return false
}

// exitCode is how a process ended, as a shell says it.
func exitCode(ps *os.ProcessState) int {
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}

// pipes are a process's standard streams without a terminal: the child's
// ends go to the process, ours stay.
type pipes struct {
	stdinR, stdinW, outR, outW, errR, errW *os.File
}

func newPipes() (*pipes, error) {
	var p pipes
	var err error
	if p.stdinR, p.stdinW, err = os.Pipe(); err != nil {
		return nil, err
	}
	if p.outR, p.outW, err = os.Pipe(); err != nil {
		p.close()
		return nil, err
	}
	if p.errR, p.errW, err = os.Pipe(); err != nil {
		p.close()
		return nil, err
	}
	return &p, nil
}

// closeChild closes the child's ends, which it holds by now.
func (p *pipes) closeChild() {
	for _, f := range []*os.File{p.stdinR, p.outW, p.errW} {
		if f != nil {
			f.Close()
		}
	}
}

func (p *pipes) close() {
	p.closeChild()
	for _, f := range []*os.File{p.stdinW, p.outR, p.errR} {
		if f != nil {
			f.Close()
		}
	}
}

// spawn runs a process in the libcontainer container (runc exec): the
// container's user namespace, seccomp filter, capabilities (none) and
// no_new_privs apply to it as to init.
func (c runcContainer) spawn(o *ProcessOptions) (*Process, error) {
	proc := &libcontainer.Process{Args: o.Argv, Env: o.Env, Cwd: o.Cwd, UID: o.UID, GID: o.GID}
	if o.Output != nil {
		proc.Stdout, proc.Stderr = o.Output, o.Output
		if err := c.c.Run(proc); err != nil {
			return nil, fmt.Errorf("start the process: %w", err)
		}
		p := NewProcess(nil, nil, nil, nil, func() (int, error) { return waitRunc(proc) }, func() error { return proc.Signal(unix.SIGKILL) })
		if host, err := proc.Pid(); err == nil {
			p.pid, _ = nsPID(host)
			awaitExec(host)
		}
		return p, nil
	}
	if !o.TTY {
		p, err := newPipes()
		if err != nil {
			return nil, err
		}
		proc.Stdin, proc.Stdout, proc.Stderr = p.stdinR, p.outW, p.errW
		if err := c.c.Run(proc); err != nil {
			p.close()
			return nil, fmt.Errorf("start the process: %w", err)
		}
		p.closeChild()
		return NewProcess(p.stdinW, p.outR, p.errR, nil, func() (int, error) { return waitRunc(proc) }, func() error { return proc.Signal(unix.SIGKILL) }), nil
	}
	parent, child, err := utils.NewSockPair("console")
	if err != nil {
		return nil, err
	}
	defer parent.Close()
	proc.ConsoleSocket = child
	proc.ConsoleWidth, proc.ConsoleHeight = o.Cols, o.Rows
	err = c.c.Run(proc)
	child.Close()
	if err != nil {
		return nil, fmt.Errorf("start the process: %w", err)
	}
	kill := func() error { return proc.Signal(unix.SIGKILL) }
	f, err := utils.RecvFile(parent) //nolint:staticcheck // runc's own way, kept until its successor is public
	var master console.Console
	if err == nil {
		if master, err = console.ConsoleFromFile(f); err != nil {
			f.Close()
		}
	}
	if err != nil {
		_ = kill()
		_, _ = proc.Wait()
		return nil, fmt.Errorf("the process's terminal: %w", err)
	}
	return terminalProcess(master, func() (int, error) { return waitRunc(proc) }, kill), nil
}

// awaitExec waits, a second at most, until host process pid runs its
// command: libcontainer returns while runc's init (this binary, run as
// "ARGV0 init") is still about to exec it, and a process list read
// meanwhile would show init.
func awaitExec(pid int) {
	initCmd := os.Args[0] + "\x00init\x00"
	path := fmt.Sprintf("/proc/%d/cmdline", pid)
	for deadline := time.Now().Add(time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if b, err := os.ReadFile(path); err != nil || string(b) != initCmd {
			return // it runs its command (or ended)
		}
	}
}

func waitRunc(proc *libcontainer.Process) (int, error) {
	ps, err := proc.Wait()
	if ps == nil {
		return -1, err
	}
	return exitCode(ps), nil
}

// terminalProcess is a process on the pseudo-terminal whose master is m.
func terminalProcess(m console.Console, wait func() (int, error), kill func() error) *Process {
	// One file both ways: Stdout's close (in Close) closes it; Stdin's
	// sends ^D, so that input ending does not end the output.
	return NewProcess(nopWriteCloser{m}, m, nil,
		func(rows, cols uint16) error { return m.Resize(console.WinSize{Height: rows, Width: cols}) },
		wait, kill)
}

// nopWriteCloser is a terminal's input: closing it is sending ^D, as a
// terminal's user ends input (the line discipline turns it into EOF).
type nopWriteCloser struct{ f io.Writer }

func (w nopWriteCloser) Write(b []byte) (int, error) { return w.f.Write(b) }
func (w nopWriteCloser) Close() error {
	_, _ = w.f.Write([]byte{4})
	return nil
}

// spawn runs a process in the gVisor sandbox (runsc exec), as the agent's
// user.
func (c *gvisorContainer) spawn(o *ProcessOptions) (*Process, error) {
	// The agent's user, as runsc's spec has it.
	args := []string{"exec", "--user", fmt.Sprintf("%d:%d", c.user.UID, c.user.GID), "--cwd", o.Cwd}
	for _, kv := range o.Env {
		args = append(args, "--env", kv)
	}
	switch {
	case o.Output != nil:
		return c.startExec(args, o.Argv, func(cmd *exec.Cmd) { cmd.Stdout, cmd.Stderr = o.Output, o.Output })
	case !o.TTY:
		p, err := newPipes()
		if err != nil {
			return nil, err
		}
		proc, err := c.startExec(args, o.Argv, func(cmd *exec.Cmd) { cmd.Stdin, cmd.Stdout, cmd.Stderr = p.stdinR, p.outW, p.errW })
		p.closeChild()
		if err != nil {
			p.close()
			return nil, err
		}
		proc.stdin, proc.stdout, proc.stderr = p.stdinW, p.outR, p.errR
		return proc, nil
	}
	return c.spawnTerminal(args, o)
}

// spawnTerminal runs a process on a pseudo-terminal of ours, as runsc
// exec --detach does for its own child: runsc exec's stdio is the
// terminal, and --console-socket makes it hand that to the process as a
// terminal (gVisor forwards its ioctls to the host's, and runsc the
// terminal's signals to the process). Without --detach, the flag's socket
// is never used, so runsc exec stays our child and says how the process
// ended.
func (c *gvisorContainer) spawnTerminal(args []string, o *ProcessOptions) (*Process, error) {
	master, slavePath, err := console.NewPty()
	if err != nil {
		return nil, fmt.Errorf("a terminal: %w", err)
	}
	if o.Rows > 0 && o.Cols > 0 {
		_ = master.Resize(console.WinSize{Height: o.Rows, Width: o.Cols})
	}
	slave, err := os.OpenFile(slavePath, os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		master.Close()
		return nil, fmt.Errorf("a terminal: %w", err)
	}
	args = append(args, "--console-socket", os.DevNull)
	proc, err := c.startExec(args, o.Argv, func(cmd *exec.Cmd) {
		cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
		// Its own session, the terminal its controlling one: ^C on it
		// signals runsc exec, which passes it on.
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	})
	slave.Close()
	if err != nil {
		master.Close()
		return nil, err
	}
	t := terminalProcess(master, proc.wait, proc.kill)
	t.pid = proc.pid
	return t, nil
}

// startExec starts runsc exec ARGS ID ARGV, its stdio set by set, and
// learns the process's pid in the sandbox from runsc's internal pid file
// (a moment after it starts: runsc writes it once the process runs). Kill
// ends that process too, not only runsc exec.
func (c *gvisorContainer) startExec(args, argv []string, set func(*exec.Cmd)) (*Process, error) {
	dir, err := os.MkdirTemp("", "sandboxd-exec-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	pidFile := filepath.Join(dir, "pid")
	cmd := c.rs.command(context.Background(), c.network, append(append(args, "--internal-pid-file", pidFile, c.id), argv...)...)
	set(cmd)
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("runsc exec: %w", err)
	}
	done := make(chan struct{})
	var code int
	var werr error
	go func() {
		code, werr = waitCmd(cmd)
		close(done)
	}()
	p := &Process{wait: func() (int, error) { <-done; return code, werr }}
	p.kill = func() error {
		if p.pid > 0 {
			_, _ = c.rs.run(c.network, "kill", "--pid", strconv.Itoa(p.pid), c.id, strconv.Itoa(int(unix.SIGKILL)))
		}
		return cmd.Process.Kill()
	}
	for deadline := time.Now().Add(runscTimeout); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if b, err := os.ReadFile(pidFile); err == nil && len(bytes.TrimSpace(b)) > 0 {
			p.pid, _ = strconv.Atoi(string(bytes.TrimSpace(b)))
			break
		}
		select {
		case <-done:
			return p, nil // it ended (or failed) at once: its output says
		default:
		}
	}
	return p, nil
}

func waitCmd(cmd *exec.Cmd) (int, error) {
	err := cmd.Wait()
	if cmd.ProcessState == nil {
		return -1, err
	}
	return exitCode(cmd.ProcessState), nil
}
