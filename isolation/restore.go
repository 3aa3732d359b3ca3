package isolation

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/opencontainers/runc/libcontainer"
	"golang.org/x/sys/unix"

	"github.com/sandboxd/sandboxd/isolation/agent"
)

// Restore takes back a sandbox a previous daemon started and left running
// (or died leaving running): its container, its init (watched through a
// pidfd, since this daemon is not its parent) and its agent. s needs ID and
// Tmp; OnUndelivered hears of an execution that ended while no daemon
// listened. An agent still busy with such an execution is connected to
// later, by the next Exec. A frozen (paused) sandbox is thawed, so that
// its agent answers: the caller freezes it again.
func (r *Runtime) Restore(ctx context.Context, s *Spec) (*Sandbox, error) {
	if s.Runtime == RuntimeRunsc {
		sb, err := r.restoreRunsc(s)
		if err != nil {
			return nil, err
		}
		return sb.reconnect(ctx)
	}
	c, err := libcontainer.Load(r.lcRoot, s.ID)
	if err != nil {
		return nil, err
	}
	if st, err := c.Status(); err == nil && st == libcontainer.Paused {
		if err := c.Resume(); err != nil {
			return nil, fmt.Errorf("thaw sandbox: %w", err)
		}
	}
	if st, err := c.Status(); err != nil || st != libcontainer.Running {
		return nil, fmt.Errorf("sandbox is %v (%v)", st, err)
	}
	state, err := c.State()
	if err != nil {
		return nil, err
	}
	pidfd, err := unix.PidfdOpen(state.InitProcessPid, unix.PIDFD_NONBLOCK)
	if err != nil {
		return nil, fmt.Errorf("watch sandbox init %d: %w", state.InitProcessPid, err)
	}
	// Status checked the pid's start time; check again now that the pidfd
	// pins the process, so it is surely the sandbox's init.
	if st, err := c.Status(); err != nil || st != libcontainer.Running {
		unix.Close(pidfd)
		return nil, fmt.Errorf("sandbox stopped while being restored (%v)", err)
	}
	sb := r.newSandbox(s, newRuncContainer(c))
	sb.started = state.Created
	if cg := c.Config().Cgroups; cg != nil && cg.Resources != nil {
		r.cpus.adopt(s.ID, cg.Resources.CpusetCpus)
	}
	go func() {
		watchExit(pidfd)
		// Not our child: how it ended is unknown, but for memory.
		sb.setExit(nil)
		close(sb.exited)
	}()
	return sb.reconnect(ctx)
}

// reconnect connects a restored sandbox's agent. An agent that accepts
// but does not answer yet is busy: it is kept, and connected to later.
func (sb *Sandbox) reconnect(ctx context.Context) (*Sandbox, error) {
	cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if _, err := sb.connect(cctx, false); err != nil && !errors.Is(err, agent.ErrUnresponsive) {
		_ = sb.destroy()
		return nil, fmt.Errorf("sandbox agent: %w", err)
	}
	return sb, nil
}

// watchExit returns when the process of pidfd exits. The pidfd joins
// Go's poller: a waiting sandbox costs no thread.
func watchExit(pidfd int) {
	f := os.NewFile(uintptr(pidfd), "pidfd")
	defer f.Close()
	rc, err := f.SyscallConn()
	if err != nil {
		return
	}
	_ = rc.Read(func(fd uintptr) bool {
		n, err := unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, 0)
		return n > 0 || (err != nil && err != unix.EINTR)
	})
}
