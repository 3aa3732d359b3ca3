package isolation

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/opencontainers/runtime-spec/specs-go"

	"github.com/sandboxd/sandboxd/cgroups"
	"github.com/sandboxd/sandboxd/isolation/agent"
)

// Spec says what one sandbox is.
type Spec struct {
	ID string
	// Workspace is the host folder shown read-write at /workspace.
	Workspace string
	// Tmp is the host folder shown read-write at /tmp, emptied at start.
	Tmp string
	// Limits are the sandbox's cgroup limits.
	Limits Limits
	// NetNS, if set, is the path of a network namespace the sandbox joins
	// (made and configured by its caller); else it gets a new one with
	// only lo.
	NetNS string
	// Env is added to the sandbox's environment.
	Env []string
	// IDBase is the first host id of the sandbox's user namespace block
	// (see package idmap); needed when the runtime has user namespaces.
	IDBase uint32
	// Runtime runs the sandbox: RuntimeRunsc, else runc.
	Runtime string
	// Image is the root filesystem (nil: the host's system folders).
	Image *Image
	// Preload is Python the interpreter runs when it starts, before any
	// execution (the template's).
	Preload string
	// Packages, if set, is the host folder of a template's installed
	// packages (see WritePackages), shown read-only at PackagesDir.
	Packages string
	// Gateway, if set, is the host folder of the session's MCP gateway
	// (its socket and helper module), shown read-only at
	// GatewayDir and put on the sandbox's PYTHONPATH.
	Gateway string
	// Warm makes Start return only once the interpreter has fully started
	// (its site-packages and imports, which it otherwise finishes while
	// the first request is on its way): for sandboxes kept in a pool.
	Warm bool
	// User is who the code is by name, and its home (zero: "sandbox" at
	// /workspace). A home elsewhere shows the workspace there too.
	User User
	// OnUndelivered, if set, is told how an execution ended whose answer
	// no daemon received (the daemon was down meanwhile).
	OnUndelivered func(*ExecResult)
	// Volumes are host folders the sandbox sees at paths of their own
	// (volumes.go).
	Volumes []VolumeMount
	// Memory, if set, is a folder Sandbox.Checkpoint filled: the sandbox
	// starts as that one was then, its processes and their memory
	// included, instead of afresh (an engine that cannot answers
	// ErrCheckpointUnsupported). Its settings must be that sandbox's;
	// its id, folders, network namespace and id block are its own.
	Memory string
}

// paths are the host paths of one sandbox's runtime state; rootfs, etc
// and image are where its view is mounted while it starts (hostview.go).
type paths struct {
	dir, rootfs, etc, image, packages, sock, log string
	// agent is the folder for the socket of an agent that makes its own
	// (runsc's), bound at AgentDir.
	agent string
	// volumes holds the host's mounts of its volumes while it starts:
	// outside dir, so that removing dir never reaches into a volume.
	volumes string
}

// agentListens says whether the agent makes its own socket, in agent
// (runsc), rather than taking the daemon's (runc).
func (p *paths) agentListens() bool { return filepath.Dir(p.sock) == p.agent }

func (r *Runtime) pathsOf(id string) *paths {
	dir := filepath.Join(r.stateDir, "sandboxes", id)
	return &paths{
		dir:      dir,
		rootfs:   filepath.Join(dir, "rootfs"),
		etc:      filepath.Join(dir, "etc"),
		image:    filepath.Join(dir, "image"),
		packages: filepath.Join(dir, "packages"),
		sock:     filepath.Join(dir, "agent.sock"),
		log:      filepath.Join(dir, "agent.log"),
		agent:    filepath.Join(dir, "agent"),
		volumes:  filepath.Join(r.stateDir, "volumes", id),
	}
}

// Sandbox is one running container with its agent.
type Sandbox struct {
	id      string
	paths   *paths
	tmp     string
	c       Container
	started time.Time
	exited  chan struct{}
	// exit is how init ended, set before exited is closed.
	exit ExitInfo
	// oomKills reads the count of out-of-memory kills in the sandbox's
	// cgroup.
	oomKills func() (uint64, error)
	// reclaims counts the kills a runsc sandbox's memory watcher had its
	// agent make (package runsc's watchMemory): its out-of-memory kills.
	reclaims atomic.Uint64
	// inside are the memory and pids limits a runsc sandbox keeps inside
	// (its memory watcher's mark, its RLIMIT_NPROC), fixed at its start;
	// nil for runc, whose cgroup keeps them. hostResources are its
	// cgroup's resources for given limits (Launched.HostResources).
	inside        *Limits
	hostResources func(Limits) *specs.LinuxResources
	// Timings are how long the steps of Start took.
	Timings Timings

	onUndelivered func(*ExecResult)
	// cpus is the runtime's, which gave the sandbox its cpuset.
	cpus *cpuPicker

	meterOnce sync.Once
	execMeter *cgroups.Meter
	// env, uid and gid are its first process's, for the processes
	// spawned beside it (attach.go).
	env      []string
	uid, gid int
	// home is where its processes start unless told otherwise.
	home string

	// execMu serialises executions. connMu guards conn, closed and
	// running and is held only briefly, so that a stop never waits for an
	// execution (it closes the connection under the execution's feet), nor
	// an interrupt.
	execMu sync.Mutex
	connMu sync.Mutex
	conn   *agent.Conn
	// closed is set once the daemon let go of the sandbox (stopped, or
	// detached at shutdown); until then a nil conn means "not connected
	// yet" (a restored sandbox whose agent was busy).
	closed bool
	// running is the execution under way, nil if none: what Interrupt
	// interrupts.
	running *runningExec

	// agentOwner is who owns a runsc sandbox's agent folder on the host
	// until the daemon seals it (sealAgentDir): its agent listens there
	// again after a checkpoint.
	agentOwner [2]int

	// stopMu serialises Stop: a second caller (the exit watcher and an
	// execution's recovery both stop a sandbox that died) returns once
	// the sandbox is gone, not while the first still removes it.
	stopMu  sync.Mutex
	stopped bool
}

// runningExec is an execution under way: its ID and the connection its
// Exec reads.
type runningExec struct {
	id   string
	conn *agent.Conn
}

// basePath is a sandbox's PATH: the system's folders.
const basePath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// baseEnv is every sandbox's environment before the session's own.
var baseEnv = []string{
	"PATH=" + basePath,
	"HOME=/workspace",
	"USER=sandbox",
	"LANG=C.UTF-8",
	"TMPDIR=/tmp",
	"MPLBACKEND=Agg",
	"PYTHONDONTWRITEBYTECODE=1",
}

// sandboxEnv is the environment of a sandbox's first process: baseEnv,
// what a template's packages need, then the session's own.
func sandboxEnv(s *Spec) []string {
	env := append([]string{}, baseEnv...)
	for i, kv := range env {
		switch {
		case strings.HasPrefix(kv, "HOME="):
			env[i] = "HOME=" + s.User.HomeDir()
		case strings.HasPrefix(kv, "USER="):
			env[i] = "USER=" + s.User.UserName()
		}
	}
	if s.Packages != "" {
		env = append(env, packagesEnv...)
	}
	if s.Gateway != "" {
		env = append(env, GatewaySocketEnv+"="+GatewayDir+"/"+GatewaySocket)
		env = addPythonPath(env, GatewayDir)
	}
	return append(env, s.Env...)
}

// addPythonPath puts dir at the end of env's PYTHONPATH.
func addPythonPath(env []string, dir string) []string {
	for i, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PYTHONPATH="); ok {
			env[i] = "PYTHONPATH=" + v + ":" + dir
			return env
		}
	}
	return append(env, "PYTHONPATH="+dir)
}

// Timings are how long the steps of a sandbox's start took: Prepare its
// root view, /tmp and runtime config; Container the runtime's start of
// its first process (runc init, or runsc's sandbox and gofer); Agent from
// there until the agent answered (the interpreter's start).
type Timings struct{ Prepare, Container, Agent time.Duration }

// StartTimings are how long the steps of its start took (zero for a
// restored sandbox).
func (sb *Sandbox) StartTimings() Timings { return sb.Timings }

// Start builds and starts a sandbox and waits until its agent answers.
func (r *Runtime) Start(ctx context.Context, s *Spec) (_ *Sandbox, retErr error) {
	if r.userns && s.IDBase == 0 {
		return nil, errors.New("a sandbox with a user namespace needs a block of host ids")
	}
	e, err := r.engine(s.Runtime)
	if err != nil {
		return nil, err
	}
	if s.Memory != "" && !canCheckpoint(e) {
		return nil, ErrCheckpointUnsupported
	}
	p := r.pathsOf(s.ID)
	t0 := time.Now()
	// 0711: the sandbox's root inside a user namespace is a nobody on the
	// host, and must still reach its root filesystem through this folder.
	if err := os.MkdirAll(p.dir, 0o711); err != nil {
		return nil, err
	}
	defer func() {
		if retErr != nil {
			_ = unmountVolumes(p)
			if unmountView(p) == nil {
				_ = os.RemoveAll(p.dir)
			}
			r.cpus.release(s.ID)
		}
	}()
	view, err := r.prepare(s, p, ownKernel(e))
	if err != nil {
		return nil, err
	}
	if err := r.mountVolumes(s, p); err != nil {
		return nil, err
	}
	logf, err := os.OpenFile(p.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	l := r.launch(s, p, e)
	l.View, l.Log, l.Args, l.Env = view, logf, agentArgs(view, s.Preload), sandboxEnv(s)
	ld, err := e.Start(ctx, l)
	if err != nil {
		return nil, err
	}
	sb := r.newSandbox(s, ld)
	if err := sb.begin(ld); err != nil {
		// Started but not watched: the container goes, as after a start
		// that failed in the engine.
		_ = ld.Container.Destroy()
		_ = r.cgroups.RemoveSandbox(s.ID)
		return nil, err
	}
	sb.Timings.Prepare = ld.Prepared.Sub(t0)
	sb.Timings.Container = sb.started.Sub(t0) - sb.Timings.Prepare
	defer func() {
		if retErr != nil {
			_ = sb.destroy()
		}
	}()
	// The agent answers once the preload code has run (the agent gives it
	// up to two minutes). 30 s: a runsc sandbox's agent took 14 s in the
	// emulated VM beside a loaded host.
	wait := 30 * time.Second
	if s.Preload != "" {
		wait += 2 * time.Minute
	}
	dctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	pong, err := sb.connect(dctx, s.Warm)
	if err != nil {
		return nil, fmt.Errorf("sandbox agent did not start: %w%s", err, sb.agentLog())
	}
	// runsc's gofer serves the view from mounts of its own by now, and
	// both runtimes' containers have their volumes.
	_ = unmountView(p)
	_ = unmountVolumes(p)
	if e := pong.PreloadError; e != nil {
		return nil, &PreloadError{ExecError(*e)}
	}
	sb.Timings.Agent = time.Since(sb.started)
	return sb, nil
}

// prepare makes what a sandbox starts from, for either runtime: its view
// (mounted in p), an empty /tmp and a workspace it owns. It returns the
// image as the sandbox is to see it.
func (r *Runtime) prepare(s *Spec, p *paths, ownKernel bool) (*Image, error) {
	uid, gid := r.HostOwner(s.IDBase)
	img := s.Image
	if img == nil {
		img = r.host
	}
	etc, err := r.etcFor(img, s.User)
	if err != nil {
		return nil, err
	}
	img = img.forUser(s.User)
	if etc != img.etc {
		v := *img
		v.etc = etc
		img = &v
	}
	var mountPoints []string
	for _, v := range s.Volumes {
		mountPoints = append(mountPoints, v.Path)
	}
	if s.Gateway != "" {
		mountPoints = append(mountPoints, GatewayDir)
	}
	if h := s.User.homeMount(); h != "" {
		mountPoints = append(mountPoints, h)
	}
	view, err := r.mountView(p, img, s.Packages, ownKernel, mountPoints...)
	if err != nil {
		return nil, fmt.Errorf("make root: %w", err)
	}
	// Each start begins with an empty /tmp, as after a reboot; but a
	// restore of memory, whose /tmp the caller filled as the memory knows
	// it.
	if s.Memory == "" {
		if err := os.RemoveAll(s.Tmp); err != nil {
			return nil, err
		}
	}
	if err := os.Mkdir(s.Tmp, 0o700); err != nil && (s.Memory == "" || !errors.Is(err, fs.ErrExist)) {
		return nil, err
	}
	if err := os.Chown(s.Tmp, uid, gid); err != nil {
		return nil, err
	}
	if err := ensureOwner(s.Workspace, uid, gid); err != nil {
		return nil, err
	}
	return view, nil
}

// PreloadError is a template's preload code failing in a new sandbox.
type PreloadError struct{ ExecError }

func (e *PreloadError) Error() string {
	return fmt.Sprintf("the preload code failed: %s: %s%s", e.Name, e.Value, tracebackTail(e.Traceback))
}

// tracebackTail is the end of a traceback, for an error message.
func tracebackTail(tb string) string {
	tb = strings.TrimSpace(tb)
	if tb == "" {
		return ""
	}
	if len(tb) > 1500 {
		tb = "…" + tb[len(tb)-1500:]
	}
	return "\n" + tb
}

// connect connects to the agent and checks it answers within ctx. The
// caller holds s.execMu or owns s alone.
func (s *Sandbox) connect(ctx context.Context, ready bool) (*agent.Message, error) {
	conn, err := agent.Dial(ctx, s.paths.sock)
	if err != nil {
		return nil, err
	}
	pong, err := conn.Ping(ctx, ready)
	if err != nil {
		conn.Close()
		return nil, err
	}
	if err := sealAgentDir(s.paths); err != nil {
		conn.Close()
		return nil, err
	}
	if pong.Undelivered != nil && s.onUndelivered != nil {
		s.onUndelivered(resultOf(pong.Undelivered))
	}
	s.connMu.Lock()
	defer s.connMu.Unlock()
	if s.closed {
		conn.Close()
		return nil, errors.New("sandbox is stopped")
	}
	s.conn = conn
	return pong, nil
}

// agentLog is the tail of what the agent printed, for error messages.
func (s *Sandbox) agentLog() string {
	b, _ := os.ReadFile(s.paths.log)
	if len(b) == 0 {
		return ""
	}
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return ": " + string(b)
}

// Tmp is the host folder shown at /tmp.
func (s *Sandbox) Tmp() string { return s.tmp }

// Started is when the sandbox started.
func (s *Sandbox) Started() time.Time { return s.started }

// Exited is closed when the sandbox's init has exited.
func (s *Sandbox) Exited() <-chan struct{} { return s.exited }

// exec runs one request in the sandbox's agent, and meters the sandbox's
// cgroup while it runs (use). On an error the sandbox is out of step with
// the daemon and must be restarted.
func (s *Sandbox) exec(req agent.Request, wait time.Duration, onOutput func(kind, data string), onDisplay func(agent.Output), use *Usage) (*agent.Message, error) {
	s.execMu.Lock()
	defer s.execMu.Unlock()
	conn, err := s.agentConn(wait)
	if err != nil {
		return nil, err
	}
	s.connMu.Lock()
	s.running = &runningExec{id: req.ID, conn: conn}
	s.connMu.Unlock()
	defer func() {
		s.connMu.Lock()
		s.running = nil
		s.connMu.Unlock()
	}()
	m := s.meter()
	k := m.Start()
	defer func() { use.CPU, use.MemoryPeak = m.Stop(k) }()
	return conn.Exec(req, wait, onOutput, onDisplay)
}

// agentConn is the connection to the agent, for a request under execMu,
// made within wait if the sandbox has none.
func (s *Sandbox) agentConn(wait time.Duration) (*agent.Conn, error) {
	s.connMu.Lock()
	conn, closed := s.conn, s.closed
	s.connMu.Unlock()
	if closed {
		return nil, errors.New("sandbox is stopped")
	}
	if conn != nil {
		return conn, nil
	}
	// Restored after a daemon restart while its agent was busy with an
	// execution from before: the agent answers once that ends, which
	// its own timeout bounds.
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	_, err := s.connect(ctx, false)
	cancel()
	if errors.Is(err, agent.ErrProtocol) {
		return nil, err // the daemon restarts it with its own agent
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %v", agent.ErrUnresponsive, err)
	}
	s.connMu.Lock()
	defer s.connMu.Unlock()
	return s.conn, nil
}

// meter is the meter of the sandbox's cgroup, made at its first
// execution; nil when its paths cannot be had.
func (s *Sandbox) meter() *cgroups.Meter {
	s.meterOnce.Do(func() {
		if paths, err := s.c.CgroupPaths(); err == nil {
			s.execMeter = cgroups.NewMeter(paths)
		}
	})
	return s.execMeter
}

// Detach lets go of the sandbox and leaves it running, for the next daemon
// to restore. An execution in flight loses its connection; the agent keeps
// how it ends for the next daemon.
func (s *Sandbox) Detach() { s.close() }

// close marks the sandbox let go and closes the connection, without
// waiting for an execution that uses it.
func (s *Sandbox) close() {
	s.connMu.Lock()
	conn := s.conn
	s.conn = nil
	s.closed = true
	s.connMu.Unlock()
	if conn != nil {
		conn.Close()
	}
	// No meter from now on; one being made is done, and its files closed.
	s.meterOnce.Do(func() {})
	s.execMeter.Close()
}

// Stop kills every process of the sandbox and removes its cgroup and
// runtime folder. The workspace is the caller's.
func (s *Sandbox) Stop() error {
	s.stopMu.Lock()
	defer s.stopMu.Unlock()
	if s.stopped {
		return nil
	}
	s.close()
	if err := s.destroy(); err != nil {
		return err
	}
	s.stopped = true
	return nil
}

func (s *Sandbox) destroy() error {
	// A frozen (paused) sandbox's processes would keep the SIGKILL pending
	// until thawed. SIGKILL to init of a pid namespace kills all of it.
	_ = s.c.Resume()
	if err := s.c.Kill(); err != nil {
		return fmt.Errorf("kill sandbox %s: %w", s.id, err)
	}
	select {
	case <-s.exited:
	case <-time.After(10 * time.Second):
		return fmt.Errorf("sandbox %s did not exit after SIGKILL", s.id)
	}
	if err := s.c.Destroy(); err != nil {
		return err
	}
	s.cpus.release(s.id)
	if err := errors.Join(unmountView(s.paths), unmountVolumes(s.paths)); err != nil {
		return err
	}
	return os.RemoveAll(s.paths.dir)
}

// SetLimits changes the sandbox's cgroup limits while it runs: a sandbox
// from the warm pool takes the limits of the session that claims it.
func (s *Sandbox) SetLimits(l Limits) error {
	r := s.c.Resources()
	res := l.Resources()
	if in := s.inside; in != nil {
		if l.MemoryBytes != in.MemoryBytes || l.Pids != in.Pids {
			return errors.New("a runsc sandbox's memory and pids limits are fixed at its start")
		}
	}
	if s.hostResources != nil {
		res = s.hostResources(l)
	}
	SetResources(&r, res)
	// The claiming session's cpus, rounded up, are the CPUs it may run on
	// (cpuset.go): a sandbox that had fewer gets every CPU back.
	if set := s.cpus.pick(s.id, l.CPUs); set != "" {
		r.CpusetCpus = set
	} else if r.CpusetCpus != "" {
		r.CpusetCpus = s.cpus.all()
	}
	release := LimitsGate()
	err := s.c.Set(&r)
	release(err == nil)
	return err
}
