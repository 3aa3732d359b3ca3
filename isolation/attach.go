package isolation

import (
	"errors"
	"io"
	"os"
	"strings"
	"syscall"

	"github.com/containerd/console"

	"github.com/sandboxd/sandboxd/isolation/agent"
)

// ProcessOptions are a process to run in a sandbox beside its agent, its
// standard streams the caller's (docker's exec -i / -it).
type ProcessOptions struct {
	Argv []string
	// Env is added to the sandbox's own environment (its first process's).
	Env []string
	// Cwd is where it starts ("": the user's home, Spec.User).
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
		cwd = s.home
	}
	oo := *o
	oo.Env, oo.Cwd, oo.UID, oo.GID = env, cwd, s.uid, s.gid
	if p, err := s.spawnInside(&oo); !errors.Is(err, agent.ErrNoSpawner) {
		return p, err
	}
	return s.c.Spawn(&oo)
}

func hasKey(env []string, key string) bool {
	for _, kv := range env {
		if k, _, _ := strings.Cut(kv, "="); k == key {
			return true
		}
	}
	return false
}

// ExitCode is how a process ended, as a shell says it.
func ExitCode(ps *os.ProcessState) int {
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}

// Pipes are a process's standard streams without a terminal: the child's
// ends (StdinR, OutW, ErrW) go to the process, ours stay.
type Pipes struct {
	StdinR, StdinW, OutR, OutW, ErrR, ErrW *os.File
}

// NewPipes makes a process's three pipes.
func NewPipes() (*Pipes, error) {
	var p Pipes
	var err error
	if p.StdinR, p.StdinW, err = os.Pipe(); err != nil {
		return nil, err
	}
	if p.OutR, p.OutW, err = os.Pipe(); err != nil {
		p.Close()
		return nil, err
	}
	if p.ErrR, p.ErrW, err = os.Pipe(); err != nil {
		p.Close()
		return nil, err
	}
	return &p, nil
}

// CloseChild closes the child's ends, which it holds by now.
func (p *Pipes) CloseChild() {
	for _, f := range []*os.File{p.StdinR, p.OutW, p.ErrW} {
		if f != nil {
			f.Close()
		}
	}
}

// Close closes both ends.
func (p *Pipes) Close() {
	p.CloseChild()
	for _, f := range []*os.File{p.StdinW, p.OutR, p.ErrR} {
		if f != nil {
			f.Close()
		}
	}
}

// TerminalProcess is a process on the pseudo-terminal whose master is m.
func TerminalProcess(m console.Console, wait func() (int, error), kill func() error) *Process {
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
