package runsc

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/containerd/console"
	"golang.org/x/sys/unix"

	"github.com/sandboxd/sandboxd/isolation"
)

// Spawn runs a process in the gVisor sandbox (runsc exec), as the agent's
// user.
func (c *gvisorContainer) Spawn(o *isolation.ProcessOptions) (*isolation.Process, error) {
	// The agent's user, as runsc's spec has it.
	args := []string{"exec", "--user", fmt.Sprintf("%d:%d", c.user.UID, c.user.GID), "--cwd", o.Cwd}
	for _, kv := range o.Env {
		args = append(args, "--env", kv)
	}
	switch {
	case o.Output != nil:
		return c.startExec(args, o.Argv, func(cmd *exec.Cmd) { cmd.Stdout, cmd.Stderr = o.Output, o.Output })
	case !o.TTY:
		p, err := isolation.NewPipes()
		if err != nil {
			return nil, err
		}
		proc, err := c.startExec(args, o.Argv, func(cmd *exec.Cmd) { cmd.Stdin, cmd.Stdout, cmd.Stderr = p.StdinR, p.OutW, p.ErrW })
		p.CloseChild()
		if err != nil {
			p.Close()
			return nil, err
		}
		return isolation.NewProcessWithPID(isolation.NewProcess(p.StdinW, p.OutR, p.ErrR, nil, proc.Wait, proc.Kill), proc.PID()), nil
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
func (c *gvisorContainer) spawnTerminal(args []string, o *isolation.ProcessOptions) (*isolation.Process, error) {
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
	return isolation.NewProcessWithPID(isolation.TerminalProcess(master, proc.Wait, proc.Kill), proc.PID()), nil
}

// startExec starts runsc exec ARGS ID ARGV, its stdio set by set, and
// learns the process's pid in the sandbox from runsc's internal pid file
// (a moment after it starts: runsc writes it once the process runs). Kill
// ends that process too, not only runsc exec.
func (c *gvisorContainer) startExec(args, argv []string, set func(*exec.Cmd)) (*isolation.Process, error) {
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
	pid := 0
	wait := func() (int, error) { <-done; return code, werr }
	kill := func() error {
		if pid > 0 {
			_, _ = c.rs.run(c.network, "kill", "--pid", strconv.Itoa(pid), c.id, strconv.Itoa(int(unix.SIGKILL)))
		}
		return cmd.Process.Kill()
	}
	// The pid is learnt before the Process is returned: kill reads it
	// after.
	process := func() *isolation.Process {
		return isolation.NewProcessWithPID(isolation.NewProcess(nil, nil, nil, nil, wait, kill), pid)
	}
	for deadline := time.Now().Add(runscTimeout); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if b, err := os.ReadFile(pidFile); err == nil && len(bytes.TrimSpace(b)) > 0 {
			pid, _ = strconv.Atoi(string(bytes.TrimSpace(b)))
			break
		}
		select {
		case <-done:
			return process(), nil // it ended (or failed) at once: its output says
		default:
		}
	}
	return process(), nil
}

func waitCmd(cmd *exec.Cmd) (int, error) {
	err := cmd.Wait()
	if cmd.ProcessState == nil {
		return -1, err
	}
	return isolation.ExitCode(cmd.ProcessState), nil
}
