package runc

import (
	"fmt"
	"os"
	"time"

	"github.com/containerd/console"
	"github.com/opencontainers/runc/libcontainer"
	"github.com/opencontainers/runc/libcontainer/utils"
	"golang.org/x/sys/unix"

	"github.com/sandboxd/sandboxd/isolation"
)

// Spawn runs a process in the libcontainer container (runc exec): the
// container's user namespace, seccomp filter, capabilities (none) and
// no_new_privs apply to it as to init.
func (c runcContainer) Spawn(o *isolation.ProcessOptions) (*isolation.Process, error) {
	proc := &libcontainer.Process{Args: o.Argv, Env: o.Env, Cwd: o.Cwd, UID: o.UID, GID: o.GID}
	if o.Output != nil {
		proc.Stdout, proc.Stderr = o.Output, o.Output
		if err := c.c.Run(proc); err != nil {
			return nil, fmt.Errorf("start the process: %w", err)
		}
		pid := sandboxPID(proc)
		if host, err := proc.Pid(); err == nil {
			awaitExec(host)
		}
		return isolation.NewProcessWithPID(isolation.NewProcess(nil, nil, nil, nil, func() (int, error) { return waitRunc(proc) }, func() error { return proc.Signal(unix.SIGKILL) }), pid), nil
	}
	if !o.TTY {
		p, err := isolation.NewPipes()
		if err != nil {
			return nil, err
		}
		proc.Stdin, proc.Stdout, proc.Stderr = p.StdinR, p.OutW, p.ErrW
		if err := c.c.Run(proc); err != nil {
			p.Close()
			return nil, fmt.Errorf("start the process: %w", err)
		}
		p.CloseChild()
		return isolation.NewProcessWithPID(isolation.NewProcess(p.StdinW, p.OutR, p.ErrR, nil, func() (int, error) { return waitRunc(proc) }, func() error { return proc.Signal(unix.SIGKILL) }), sandboxPID(proc)), nil
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
	return isolation.NewProcessWithPID(isolation.TerminalProcess(master, func() (int, error) { return waitRunc(proc) }, kill), sandboxPID(proc)), nil
}

// sandboxPID is proc's pid as the sandbox names it (0: unknown).
func sandboxPID(proc *libcontainer.Process) int {
	host, err := proc.Pid()
	if err != nil {
		return 0
	}
	pid, _ := nsPID(host)
	return pid
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
	return isolation.ExitCode(ps), nil
}
