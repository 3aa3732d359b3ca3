package isolation

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"syscall"
	"time"

	ocgroups "github.com/opencontainers/cgroups"
	"github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"

	"github.com/sandboxd/sandboxd/cgroups"
)

// Limits are a sandbox's resources, in the units the API speaks.
type Limits struct {
	MemoryBytes int64
	CPUs        float64
	Pids        int64
}

// Resources are l as an OCI spec's cgroup resources.
func (l Limits) Resources() *specs.LinuxResources {
	return cgroups.Resources(cgroups.Limits{MemoryBytes: l.MemoryBytes, CPUs: l.CPUs, Pids: l.Pids})
}

// SetResources sets in r the memory, CPU quota and pids limits of l that
// l sets (a claimed pooled sandbox's new limits, or a runsc sandbox's).
func SetResources(r *ocgroups.Resources, l *specs.LinuxResources) {
	if m := l.Memory; m != nil {
		if m.Limit != nil {
			r.Memory = *m.Limit
		}
		if m.Swap != nil {
			r.MemorySwap = *m.Swap
		}
	}
	if c := l.CPU; c != nil {
		if c.Quota != nil {
			r.CpuQuota = *c.Quota
		}
		if c.Period != nil {
			r.CpuPeriod = *c.Period
		}
	}
	if p := l.Pids; p != nil && p.Limit != nil {
		limit := *p.Limit
		r.PidsLimit = &limit
	}
}

// Stats are what a sandbox uses now.
type Stats struct {
	CPUSeconds  float64
	MemoryBytes uint64
	MemoryLimit uint64
	Pids        uint64
	// OOMKills counts the processes the kernel killed for memory in the
	// sandbox since it started.
	OOMKills uint64
}

// ExitInfo is how a sandbox's init ended.
type ExitInfo struct {
	// Known is false when the daemon could not learn it: a restored
	// sandbox's init is not its child.
	Known bool
	// Signal is the signal that killed init (0: it exited), Status its
	// exit status.
	Signal syscall.Signal
	Status int
	// OOM is set when the kernel killed a process of the sandbox for
	// memory.
	OOM bool
}

// String says how the sandbox ended, for a reason shown to users.
func (e ExitInfo) String() string {
	switch {
	case e.OOM:
		return "out of memory"
	case !e.Known:
		return "sandbox exited"
	case e.Signal != 0:
		return fmt.Sprintf("sandbox exited: signal %d", int(e.Signal))
	default:
		return fmt.Sprintf("sandbox exited: status %d", e.Status)
	}
}

// newSandbox is the Sandbox of container ld made from spec s.
func (r *Runtime) newSandbox(s *Spec, ld *Launched) *Sandbox {
	id := s.ID
	p := r.pathsOf(id)
	if ld.AgentSocket != "" {
		p.sock = ld.AgentSocket
	}
	sb := &Sandbox{
		id: id, paths: p, tmp: s.Tmp, c: ld.Container, exited: make(chan struct{}),
		started:       ld.Started,
		inside:        ld.Inside,
		hostResources: ld.HostResources,
		onUndelivered: s.OnUndelivered,
		cpus:          r.cpus,
		env:           sandboxEnv(s),
		uid:           r.UID(),
		gid:           r.GID(),
		home:          s.User.HomeDir(),
	}
	sb.agentOwner[0], sb.agentOwner[1] = r.HostOwner(s.IDBase)
	// Under runsc the kernel's kills are the Sentry's (the sandbox's
	// end), the agent's reclaims the processes'.
	sb.oomKills = func() (uint64, error) {
		n, err := r.cgroups.OOMKills(id)
		return n + sb.reclaims.Load(), err
	}
	return sb
}

// setExit records how init ended (ps nil: unknown) before Exited closes.
func (s *Sandbox) setExit(ps *os.ProcessState) {
	if ps != nil {
		if ws, ok := ps.Sys().(syscall.WaitStatus); ok {
			s.exit.Known = true
			if ws.Signaled() {
				s.exit.Signal = ws.Signal()
			} else {
				s.exit.Status = ws.ExitStatus()
			}
		}
	}
	if n, err := s.oomKills(); err == nil && n > 0 {
		s.exit.OOM = true
	}
}

// ID is the sandbox's id (its session's).
func (s *Sandbox) ID() string { return s.id }

// Exit is how the sandbox's init ended; valid once Exited is closed.
func (s *Sandbox) Exit() ExitInfo {
	<-s.exited
	return s.exit
}

// Stats reads the sandbox's cgroup.
func (s *Sandbox) Stats() (Stats, error) {
	st, err := s.c.Stats()
	if err != nil {
		return Stats{}, err
	}
	u := cgroups.UsageOf(st)
	out := Stats{CPUSeconds: u.CPUSeconds, MemoryBytes: u.MemoryBytes, MemoryLimit: u.MemoryLimit, Pids: u.Pids}
	if in := s.inside; in != nil && in.MemoryBytes > 0 {
		out.MemoryLimit = uint64(in.MemoryBytes) // the session's; the cgroup's has room for gVisor
	}
	out.OOMKills, _ = s.oomKills()
	return out, nil
}

// Freeze stops every process of the sandbox where it is (the cgroup
// freezer): memory and state stay, CPU use is nil until Thaw.
func (s *Sandbox) Freeze() error { return s.c.Pause() }

// Thaw lets a frozen sandbox run on.
func (s *Sandbox) Thaw() error { return s.c.Resume() }

// Check asks the sandbox's agent whether it answers, within ctx: the
// health check of a sandbox that waits in a warm pool.
func (s *Sandbox) Check(ctx context.Context) error { return s.ping(ctx, false) }

// Ready waits, within ctx, until the sandbox's interpreter has finished
// starting. A native supervisor answers as soon as it runs and starts
// its worker after, so a session made an instant ago may still be
// starting one: a pause waits for it, and freezes a whole interpreter.
func (s *Sandbox) Ready(ctx context.Context) error { return s.ping(ctx, true) }

// ping pings the sandbox's agent, with ready (see agent.Conn.Ping).
func (s *Sandbox) ping(ctx context.Context, ready bool) error {
	s.execMu.Lock()
	defer s.execMu.Unlock()
	s.connMu.Lock()
	conn, closed := s.conn, s.closed
	s.connMu.Unlock()
	if closed || conn == nil {
		return errors.New("sandbox is stopped")
	}
	_, err := conn.Ping(ctx, ready)
	return err
}

// Alive says, without a round trip to its agent, that the sandbox's
// first process (runc's init, the agent; runsc's sandbox) has not exited
// and is not about to: a process killed a moment ago reads as gone,
// whether it died (its pidfd polls readable) or its SIGKILL waits to be
// acted on (a busy host lets it wait). A claim from a warm pool asks
// this, where a ping would cost the agent's wake-up.
func (s *Sandbox) Alive() bool {
	select {
	case <-s.Exited():
		return false
	default:
	}
	pid, _, err := s.c.InitProcess()
	if err != nil || pid <= 0 {
		return false
	}
	// No pid reuse to fear: the pid is not free until the daemon reaps
	// it, and then Exited is closed.
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	if n, err := unix.Poll(fds, 0); err != nil || n != 0 {
		return false
	}
	return !exiting(pid) && !killPending(pid)
}

// exiting says process pid is on its way out (PF_EXITING in the flags of
// /proc/PID/stat: it took its SIGKILL and is not a zombie yet), or that
// it cannot tell.
func exiting(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	// After the command's closing parenthesis: state ppid pgrp session
	// tty_nr tpgid flags ...
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return true
	}
	f := bytes.Fields(b[i+1:])
	if len(f) < 7 {
		return true
	}
	const pfExiting = 0x4
	flags, err := strconv.ParseUint(string(f[6]), 10, 64)
	return err != nil || flags&pfExiting != 0 || f[0][0] == 'Z' || f[0][0] == 'X'
}

// killPending says a SIGKILL waits for process pid (its own or its
// thread group's pending set, /proc/PID/status), or that it cannot tell.
func killPending(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return true
	}
	for _, key := range []string{"\nSigPnd:", "\nShdPnd:"} {
		i := bytes.Index(b, []byte(key))
		if i < 0 {
			return true
		}
		line, _, _ := bytes.Cut(b[i+len(key):], []byte("\n"))
		mask, err := strconv.ParseUint(string(bytes.TrimSpace(line)), 16, 64)
		if err != nil {
			return true
		}
		if mask&(1<<(unix.SIGKILL-1)) != 0 {
			return true
		}
	}
	return false
}

// AgentVersion is the protocol version of the sandbox's agent, 0 while
// it is not connected.
func (s *Sandbox) AgentVersion() int {
	s.connMu.Lock()
	defer s.connMu.Unlock()
	if s.conn == nil {
		return 0
	}
	return s.conn.Version()
}

// reclaim has the agent kill the sandbox's process with the most resident
// memory (package runsc's watchMemory, at a runsc sandbox's memory mark).
// An agent too old for it (a sandbox an older daemon started), or one that
// does not take the line, leaves the hard limit to act.
func (s *Sandbox) reclaim() {
	s.connMu.Lock()
	conn, closed := s.conn, s.closed
	if s.running != nil {
		conn = s.running.conn
	}
	s.connMu.Unlock()
	if conn == nil || closed {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if conn.Reclaim(ctx) == nil {
		s.reclaims.Add(1)
	}
}
