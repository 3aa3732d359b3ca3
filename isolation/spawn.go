package isolation

import (
	"context"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/sandboxd/sandboxd/isolation/agent"
)

// spawnSocket is the name of the agent's listener for processes, beside
// its listener for the daemon's requests (agent.SpawnFD, agent.SpawnPath).
const spawnSocket = "spawn.sock"

// spawnPath is the host path of the sandbox's listener for processes.
func (p *paths) spawnPath() string { return filepath.Join(filepath.Dir(p.sock), spawnSocket) }

// spawnInside has the sandbox's agent start o (a fork of its supervisor,
// which is the sandbox's user, in its namespaces, cgroup and seccomp
// filter, without capabilities), not the runtime (a runc init, a runsc
// exec: 15-20 ms each). agent.ErrNoSpawner if the agent cannot (older
// than agent.SpawnVersion, not connected, no listener): the runtime
// starts it then. Terminals stay the runtime's: the terminal must be the
// sandbox's own, and gVisor passes none of its descriptors out.
func (s *Sandbox) spawnInside(o *ProcessOptions) (*Process, error) {
	if o.TTY || s.AgentVersion() < agent.SpawnVersion {
		return nil, agent.ErrNoSpawner
	}
	req := &agent.SpawnRequest{Argv: o.Argv, Env: o.Env, Cwd: o.Cwd}
	ctx := context.Background()
	start := func(stdio [3]*os.File) (*agent.Spawned, error) {
		return agent.Spawn(ctx, s.paths.spawnPath(), req, stdio)
	}
	if o.Output != nil {
		null, err := os.Open(os.DevNull)
		if err != nil {
			return nil, err
		}
		defer null.Close()
		sp, err := start([3]*os.File{null, o.Output, o.Output})
		if err != nil {
			return nil, err
		}
		return spawnedProcess(sp, nil), nil
	}
	p, err := NewPipes()
	if err != nil {
		return nil, err
	}
	sp, err := start([3]*os.File{p.StdinR, p.OutW, p.ErrW})
	p.CloseChild()
	if err != nil {
		p.Close()
		return nil, err
	}
	return spawnedProcess(sp, p), nil
}

// spawnedProcess is sp as a Process, its streams p's (nil: none).
func spawnedProcess(sp *agent.Spawned, p *Pipes) *Process {
	wait := func() (int, error) {
		defer sp.Close()
		return sp.Wait()
	}
	kill := func() error {
		// A connection that takes no more lines is a process (or a
		// sandbox) that has ended.
		_ = sp.Signal(unix.SIGKILL)
		return nil
	}
	if p == nil {
		return NewProcessWithPID(NewProcess(nil, nil, nil, nil, wait, kill), sp.PID)
	}
	return NewProcessWithPID(NewProcess(p.StdinW, p.OutR, p.ErrR, nil, wait, kill), sp.PID)
}
