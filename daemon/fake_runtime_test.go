package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sandboxd/sandboxd/isolation"
)

// fakeHost is what outlives a daemon in the unit tests: the sandboxes
// that run, as a host keeps them across daemon restarts. Its runtime()
// is one daemon's view of it.
type fakeHost struct {
	mu        sync.Mutex
	running   map[string]*fakeBox
	leftovers map[string]bool // runtime state without a live sandbox
	starts    int
	// failStart, if set, makes every start fail with it.
	failStart error
	// cgroupErr, if set, is what CgroupsWritable answers.
	cgroupErr error
	// stopDelay makes every stop take that long; startDelay every start.
	stopDelay, startDelay time.Duration
	// oldAgent marks sandboxes whose agent a restarted daemon cannot
	// speak to (started by an older daemon).
	oldAgent map[string]bool
	// ports are the servers "inside" every sandbox: port → the loopback
	// address a test serves it on.
	ports map[int]string
	tmp   string
	// specs are the specs of every start, in order.
	specs []isolation.Spec
	// runtimes are what the runtime says of runc and runsc (both usable,
	// runsc without networks, unless a test says otherwise before the
	// daemon starts).
	runtimes []isolation.RuntimeInfo
	netnses  int // made by NewNetNS
	// noCheckpoints is a runsc that cannot save memory (runc never can).
	noCheckpoints bool
}

func newFakeHost(tmp string) *fakeHost {
	return &fakeHost{running: map[string]*fakeBox{}, leftovers: map[string]bool{}, oldAgent: map[string]bool{}, ports: map[int]string{}, tmp: tmp,
		runtimes: []isolation.RuntimeInfo{{Name: isolation.RuntimeRunc, Usable: true, Networks: true}, {Name: isolation.RuntimeRunsc, Usable: true, Platform: "ptrace"}}}
}

// box is the running sandbox id, nil if none.
func (h *fakeHost) box(id string) *fakeBox {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.running[id]
}

// ids are the sandboxes that run.
func (h *fakeHost) ids() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for id := range h.running {
		out = append(out, id)
	}
	return out
}

// fakeRuntime implements Runtime over a fakeHost.
type fakeRuntime struct{ h *fakeHost }

var _ Runtime = fakeRuntime{}

func (r fakeRuntime) Start(ctx context.Context, spec *isolation.Spec) (Sandbox, error) {
	h := r.h
	h.mu.Lock()
	delay := h.startDelay
	h.mu.Unlock()
	time.Sleep(delay)
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.failStart != nil {
		return nil, h.failStart
	}
	// A real start waits for the agent within ctx.
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if h.running[spec.ID] != nil {
		return nil, fmt.Errorf("sandbox %s exists", spec.ID)
	}
	h.starts++
	h.specs = append(h.specs, *spec)
	b := &fakeBox{h: h, id: spec.ID, workspace: spec.Workspace, exited: make(chan struct{}), vars: map[string]string{},
		limits: spec.Limits, started: time.Now(), tmp: filepath.Join(h.tmp, spec.ID+"-tmp"), env: spec.Env,
		netns: filepath.Join(h.tmp, fmt.Sprintf("%s-netns-%d", spec.ID, h.starts))}
	if spec.NetNS != "" {
		// The namespace the daemon made (NewNetNS): the file it opened.
		ns, err := os.Readlink(spec.NetNS)
		if err != nil {
			return nil, fmt.Errorf("network namespace: %w", err)
		}
		b.netns = ns
	}
	if err := os.MkdirAll(b.tmp, 0o700); err != nil {
		return nil, err
	}
	if spec.Memory != "" {
		if err := b.restoreMemory(spec.Memory); err != nil {
			return nil, err
		}
		// The /tmp the daemon filled (a snapshot's), as the runtime
		// shows it.
		if _, err := os.Stat(spec.Tmp); err == nil {
			if err := os.CopyFS(b.tmp, os.DirFS(spec.Tmp)); err != nil {
				return nil, err
			}
		}
	}
	h.running[spec.ID] = b
	return b, nil
}

func (r fakeRuntime) Restore(ctx context.Context, spec *isolation.Spec) (Sandbox, error) {
	h := r.h
	h.mu.Lock()
	defer h.mu.Unlock()
	b := h.running[spec.ID]
	if b == nil {
		return nil, errors.New("no such sandbox")
	}
	if h.oldAgent[spec.ID] {
		return nil, fmt.Errorf("sandbox agent: %w: the agent's is 0", isolation.ErrAgentVersion)
	}
	_ = b.Thaw() // as the runtime's Restore does, to reach the agent
	return b, nil
}

// NewNetNS is a file standing for a network namespace.
func (r fakeRuntime) NewNetNS() (*os.File, error) {
	r.h.mu.Lock()
	r.h.netnses++
	n := r.h.netnses
	r.h.mu.Unlock()
	return os.Create(filepath.Join(r.h.tmp, fmt.Sprintf("netns-%d", n)))
}

func (r fakeRuntime) CgroupsWritable() error {
	r.h.mu.Lock()
	defer r.h.mu.Unlock()
	return r.h.cgroupErr
}

func (r fakeRuntime) Leftovers() ([]string, error) {
	h := r.h
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for id := range h.running {
		out = append(out, id)
	}
	for id := range h.leftovers {
		out = append(out, id)
	}
	return out, nil
}

func (r fakeRuntime) Cleanup(id string) error {
	h := r.h
	h.mu.Lock()
	b := h.running[id]
	delete(h.leftovers, id)
	h.mu.Unlock()
	if b != nil {
		b.die(isolation.ExitInfo{Known: true, Signal: syscall.SIGKILL})
	}
	return nil
}

func (fakeRuntime) OpenImage(name, rootfs string) (*isolation.Image, error) { return nil, nil }
func (fakeRuntime) RemoveImage(name string) error                           { return nil }
func (fakeRuntime) HostOwner(uint32) (int, int)                             { return os.Getuid(), os.Getgid() }
func (fakeRuntime) UID() int                                                { return 1000 }
func (r fakeRuntime) Info() isolation.Info {
	r.h.mu.Lock()
	defer r.h.mu.Unlock()
	return isolation.Info{Name: "fake", CgroupVersion: 2, Runtimes: slices.Clone(r.h.runtimes)}
}
func (fakeRuntime) Close() error { return nil }

func (r fakeRuntime) CanCheckpoint(rt string) bool {
	r.h.mu.Lock()
	defer r.h.mu.Unlock()
	return rt == isolation.RuntimeRunsc && !r.h.noCheckpoints
}

// fakeMemory is a fake sandbox's memory image's file in its folder.
const fakeMemory = "vars.json"

// Checkpoint keeps the box's variables (its default context's) in dir,
// as runsc keeps a sandbox's memory; a background process refuses it,
// as the agent does.
func (b *fakeBox) Checkpoint(ctx context.Context, dir string, paused func() error) error {
	if !(fakeRuntime{b.h}).CanCheckpoint(isolation.RuntimeRunsc) {
		return isolation.ErrCheckpointUnsupported
	}
	if err := os.Mkdir(dir, 0o700); err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.procs) > 0 {
		return &isolation.CheckpointRefusedError{Reason: "a process started beside the interpreter still runs"}
	}
	buf, err := json.Marshal(b.vars)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, fakeMemory), buf, 0o600); err != nil {
		return err
	}
	return paused()
}

// Hibernate keeps the box's variables as Checkpoint does, and the box
// dies.
func (b *fakeBox) Hibernate(ctx context.Context, dir string, saved func() error) error {
	if err := b.Checkpoint(ctx, dir, saved); err != nil {
		return err
	}
	b.die(isolation.ExitInfo{Known: true, Signal: 9})
	return nil
}

// restoreMemory takes the variables a Checkpoint kept in dir.
func (b *fakeBox) restoreMemory(dir string) error {
	buf, err := os.ReadFile(filepath.Join(dir, fakeMemory))
	if err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	return json.Unmarshal(buf, &b.vars)
}

// fakeBox is one fake sandbox: a tiny interpreter whose variables live
// as long as the sandbox. Code it knows:
//
//	x = 42     sets x          x       answers x's value
//	crash      the sandbox dies under the execution
//	hang       the agent stops answering
//	oom        the execution is killed for memory
//	sleep      runs until interrupted (status interrupted) or its
//	           timeout (status timeout); variables stay
//	anything else: echoed to stdout
type fakeBox struct {
	h         *fakeHost
	stopMu    sync.Mutex // Stop's calls one after the other, as the real one's
	id        string
	started   time.Time
	tmp       string
	workspace string
	env       []string
	// netns names its network namespace (a file, unique to this box).
	netns string

	mu   sync.Mutex
	vars map[string]string
	// ctxVars are the variables of each code context but the default
	// one (vars), by name: a context's own interpreter.
	ctxVars map[string]map[string]string
	// parked are the copies of each context's variables kept for undo
	// (ExecOptions.Checkpoints), by context ("" the default one).
	parked map[string][]map[string]string
	// noCopies is an agent that parks no copy (older than protocol 17).
	noCopies bool
	limits   isolation.Limits
	frozen   bool
	// readyFrozen says the last freeze came after a Ready call: the
	// interpreter was asked to finish starting first.
	readyFrozen, readied bool
	oomKills             uint64
	unhealthy            bool
	// gone: its process was killed, its exit not yet seen (Alive is false).
	gone   bool
	exited chan struct{}
	exit   isolation.ExitInfo
	once   sync.Once

	// runMu guards what Interrupt sees, apart from mu, which an
	// execution holds: interrupt, open while a sleep runs, and
	// oldAgent, an agent too old to interrupt.
	runMu     sync.Mutex
	interrupt chan struct{}
	// detached is closed by Detach.
	detached chan struct{}
	// procs are the background processes that run, by pid: each ends
	// with what its channel gets.
	procs      map[int]chan int
	detachOnce sync.Once
	oldAgent   bool
}

var _ Sandbox = (*fakeBox)(nil)

// die ends the sandbox as if its init exited.
func (b *fakeBox) die(how isolation.ExitInfo) {
	b.once.Do(func() {
		b.h.mu.Lock()
		if b.h.running[b.id] == b {
			delete(b.h.running, b.id)
		}
		b.h.mu.Unlock()
		b.mu.Lock()
		b.exit = how
		b.mu.Unlock()
		close(b.exited)
	})
}

func (b *fakeBox) dead() bool {
	select {
	case <-b.exited:
		return true
	default:
		return false
	}
}

func (b *fakeBox) ID() string { return b.id }

func (b *fakeBox) Exec(ctx context.Context, o *isolation.ExecOptions, out isolation.Output) (*isolation.ExecResult, error) {
	if b.dead() {
		return nil, errors.New("sandbox is stopped")
	}
	if b.isFrozen() {
		return nil, isolation.ErrUnresponsive // a frozen agent does not answer
	}
	code := strings.TrimSpace(o.Code)
	r := &isolation.ExecResult{ID: o.ID, Language: o.Language, Status: isolation.StatusOK, Duration: time.Millisecond,
		Usage: isolation.Usage{CPU: 500 * time.Microsecond, MemoryPeak: 8 << 20}}
	if code == "sleep" {
		out(isolation.StreamStdout, "sleeping\n")
		return b.sleep(o, r)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	vars := b.vars
	if o.Context != "" {
		if vars = b.ctxVars[o.Context]; vars == nil {
			// A context this sandbox never started: started now, afresh.
			vars, r.StateReset = b.startContext(o.Context), true
		}
	}
	if o.Checkpoints > 0 && o.Language == isolation.LanguagePython && !b.noCopies {
		if b.parked == nil {
			b.parked = map[string][]map[string]string{}
		}
		p := append(b.parked[o.Context], maps.Clone(vars))
		b.parked[o.Context] = p[max(0, len(p)-o.Checkpoints):]
		r.Checkpoint = true
	}
	switch {
	case code == "crash":
		b.mu.Unlock()
		b.die(isolation.ExitInfo{Known: true, Signal: syscall.SIGKILL})
		b.mu.Lock()
		return nil, errors.New("agent connection closed")
	case code == "hang":
		return nil, isolation.ErrUnresponsive
	case o.Language == isolation.LanguageShell && strings.Contains(code, "'--target'"):
		// pip install --target: the fake installs a module of each
		// requirement's name.
		if err := b.fakeInstall(code); err != nil {
			return nil, err
		}
		out(isolation.StreamStdout, code+"\n")
	case strings.HasPrefix(code, "display "):
		// Each word displayed as HTML, a line of stdout after each; a
		// figure left open at the end.
		for _, w := range strings.Fields(code)[1:] {
			if o.OnDisplay != nil {
				o.OnDisplay(isolation.RichOutput{MIME: "text/html", Data: w, Bundle: map[string]string{"text/html": w}})
			}
			out(isolation.StreamStdout, "after "+w+"\n")
		}
		r.Outputs = []isolation.RichOutput{{MIME: "image/png", Data: "iVBOR"}}
	case code == "oom":
		b.oomKills++
		r.Status, r.ExitCode, r.StateReset = isolation.StatusKilled, 137, true
		b.vars = map[string]string{}
	case o.Language == isolation.LanguagePython && strings.Contains(code, "="):
		k, v, _ := strings.Cut(code, "=")
		vars[strings.TrimSpace(k)] = strings.TrimSpace(v)
	case o.Language == isolation.LanguagePython && vars[code] != "":
		v := vars[code]
		r.Result = &v
	case o.Language == isolation.LanguagePython && isIdent(code):
		r.Status = isolation.StatusError
		r.Error = &isolation.ExecError{Name: "NameError", Value: fmt.Sprintf("name '%s' is not defined", code)}
	default:
		out(isolation.StreamStdout, code+"\n")
	}
	return r, nil
}

// startContext starts context name's interpreter afresh; b.mu held.
func (b *fakeBox) startContext(name string) map[string]string {
	if b.ctxVars == nil {
		b.ctxVars = map[string]map[string]string{}
	}
	b.ctxVars[name] = map[string]string{}
	return b.ctxVars[name]
}

func (b *fakeBox) StartContext(ctx context.Context, name, cwd, from, language string) error {
	if b.dead() {
		return errors.New("sandbox is stopped")
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if name == isolation.ContextDefault {
		b.vars = map[string]string{}
		return nil
	}
	vars := b.startContext(name)
	if from != "" {
		src := b.vars
		if from != isolation.ContextDefault {
			src = b.ctxVars[from]
		}
		maps.Copy(vars, src)
	}
	return nil
}

func (b *fakeBox) Undo(ctx context.Context, name string, steps int) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	p := b.parked[name]
	if len(p) < steps {
		return 0, fmt.Errorf("agent: context %s keeps %d checkpoints", name, len(p))
	}
	vars := p[len(p)-steps]
	b.parked[name] = p[:len(p)-steps]
	if name == "" {
		b.vars = vars
	} else {
		b.ctxVars[name] = vars
	}
	return steps, nil
}

func (b *fakeBox) DeleteContext(ctx context.Context, name string) error {
	if name == isolation.ContextDefault {
		return errors.New("agent: the default context cannot be deleted")
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.ctxVars, name)
	return nil
}

// fakeInstall makes a module of each requirement of a pip command line in
// its --target folder, a folder of /workspace.
func (b *fakeBox) fakeInstall(code string) error {
	words := strings.Fields(strings.ReplaceAll(code, "'", ""))
	i := slices.Index(words, "--target")
	dir := filepath.Join(b.workspace, strings.TrimPrefix(words[i+1], "/workspace/"))
	for _, req := range words[slices.Index(words, "--")+1:] {
		name, _, _ := strings.Cut(req, "==")
		if err := os.MkdirAll(filepath.Join(dir, name), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, name, "__init__.py"), []byte("VALUE = 1\n"), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// startSpecs are the specs of every start so far, in order.
func (h *fakeHost) startSpecs() []isolation.Spec {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.specs)
}

// specOf is the spec sandbox id last started with: a pool's refill may
// start after the start a test asked for, so the last spec is not always it.
func (h *fakeHost) specOf(id string) (isolation.Spec, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for i := len(h.specs) - 1; i >= 0; i-- {
		if h.specs[i].ID == id {
			return h.specs[i], true
		}
	}
	return isolation.Spec{}, false
}

// sleep is the execution "sleep": it blocks, holding none of b's locks,
// until Interrupt or its timeout.
func (b *fakeBox) sleep(o *isolation.ExecOptions, r *isolation.ExecResult) (*isolation.ExecResult, error) {
	ch := make(chan struct{})
	b.runMu.Lock()
	b.interrupt = ch
	b.runMu.Unlock()
	defer func() {
		b.runMu.Lock()
		b.interrupt = nil
		b.runMu.Unlock()
	}()
	timeout := o.Timeout
	if timeout <= 0 {
		timeout = time.Minute
	}
	select {
	case <-ch:
		r.Status, r.ExitCode = isolation.StatusInterrupted, 130
	case <-time.After(timeout):
		r.Status, r.ExitCode = isolation.StatusTimeout, 124
	case <-b.exited:
		return nil, errors.New("agent connection closed")
	case <-b.detachedCh():
		return nil, errors.New("agent connection closed")
	}
	r.Error = &isolation.ExecError{Name: "KeyboardInterrupt"}
	return r, nil
}

func (b *fakeBox) Interrupt(ctx context.Context) (bool, error) {
	b.runMu.Lock()
	defer b.runMu.Unlock()
	if b.interrupt == nil {
		return false, nil
	}
	if b.oldAgent {
		return false, fmt.Errorf("%w: the agent speaks 2", isolation.ErrInterruptUnsupported)
	}
	select {
	case <-b.interrupt: // a second interrupt changes nothing
	default:
		close(b.interrupt)
	}
	return true, nil
}

// sleeping says whether a "sleep" execution runs.
func (b *fakeBox) sleeping() bool {
	b.runMu.Lock()
	defer b.runMu.Unlock()
	return b.interrupt != nil
}

func isIdent(s string) bool {
	for _, c := range s {
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return s != ""
}

// Spawn runs a fake process: it echoes its input, upper-cased, to stdout,
// says "bye" on stderr at the input's end, and exits 3 (argv "fail":
// cannot start; argv "hang": runs until killed).
func (b *fakeBox) Spawn(o *isolation.ProcessOptions) (*isolation.Process, error) {
	if b.dead() {
		return nil, errors.New("sandbox is stopped")
	}
	if o.Argv[0] == "fail" {
		return nil, errors.New("exec: no such file")
	}
	if o.Output != nil {
		// In the background: it says its argv and runs until signalled.
		_, _ = fmt.Fprintf(o.Output, "%s\n", strings.Join(o.Argv, " "))
		b.runMu.Lock()
		if b.procs == nil {
			b.procs = map[int]chan int{}
		}
		pid := 100 + len(b.procs)
		end := make(chan int, 1)
		b.procs[pid] = end
		b.runMu.Unlock()
		code := -1
		var once sync.Once
		wait := func() (int, error) {
			once.Do(func() { code = <-end })
			return code, nil
		}
		p := isolation.NewProcess(nil, nil, nil, nil, wait, func() error { b.signalFake(pid, 9); return nil })
		return isolation.NewProcessWithPID(p, pid), nil
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	errR, errW := io.Pipe()
	killed := make(chan struct{})
	var once sync.Once
	done := make(chan int, 1)
	go func() {
		defer outW.Close()
		defer errW.Close()
		if o.Argv[0] == "hang" {
			<-killed
			done <- 137
			return
		}
		buf := make([]byte, 4096)
		for {
			n, err := inR.Read(buf)
			if n > 0 {
				_, _ = outW.Write([]byte(strings.ToUpper(string(buf[:n]))))
			}
			if err != nil {
				break
			}
		}
		_, _ = errW.Write([]byte("bye\n"))
		done <- 3
	}()
	kill := func() error {
		once.Do(func() { close(killed); inR.Close() })
		return nil
	}
	return isolation.NewProcess(inW, outR, errR, nil, func() (int, error) { return <-done, nil }, kill), nil
}

// Processes are the agent (1) and the background processes that run.
func (b *fakeBox) Processes() ([]isolation.ProcessInfo, error) {
	b.runMu.Lock()
	defer b.runMu.Unlock()
	out := []isolation.ProcessInfo{{PID: 1, Command: "python3 agent"}}
	for pid := range b.procs {
		out = append(out, isolation.ProcessInfo{PID: pid, PPID: 1, Command: "background"})
	}
	slices.SortFunc(out, func(a, b isolation.ProcessInfo) int { return a.PID - b.PID })
	return out, nil
}

func (b *fakeBox) Signal(pid int, sig unix.Signal) error {
	if !b.signalFake(pid, int(sig)) {
		return isolation.ErrNoProcess
	}
	return nil
}

// signalFake ends background process pid (128+sig), if it runs.
func (b *fakeBox) signalFake(pid, sig int) bool {
	b.runMu.Lock()
	defer b.runMu.Unlock()
	end, ok := b.procs[pid]
	if ok {
		delete(b.procs, pid)
		end <- 128 + sig
	}
	return ok
}

// Alive is false once it exited, or once a test said its process is gone
// (gone: killed, its exit not yet seen).
func (b *fakeBox) Alive() bool {
	select {
	case <-b.exited:
		return false
	default:
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return !b.gone
}

func (b *fakeBox) Check(ctx context.Context) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.unhealthy {
		return errors.New("agent does not answer")
	}
	return nil
}

func (b *fakeBox) SetLimits(l isolation.Limits) error {
	b.mu.Lock()
	b.limits = l
	b.mu.Unlock()
	return nil
}

func (b *fakeBox) Stats() (isolation.Stats, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return isolation.Stats{MemoryBytes: 1 << 20, MemoryLimit: uint64(b.limits.MemoryBytes), Pids: 1, OOMKills: b.oomKills}, nil
}

func (b *fakeBox) Freeze() error {
	b.mu.Lock()
	b.frozen, b.readyFrozen, b.readied = true, b.readied, false
	b.mu.Unlock()
	return nil
}

func (b *fakeBox) wasReadyFrozen() bool { b.mu.Lock(); defer b.mu.Unlock(); return b.readyFrozen }

func (b *fakeBox) Ready(ctx context.Context) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.readied = true
	if b.unhealthy {
		return errors.New("agent does not answer")
	}
	return nil
}

func (b *fakeBox) isFrozen() bool { b.mu.Lock(); defer b.mu.Unlock(); return b.frozen }
func (b *fakeBox) Thaw() error    { b.mu.Lock(); b.frozen = false; b.mu.Unlock(); return nil }

func (b *fakeBox) Stop() error {
	b.stopMu.Lock()
	defer b.stopMu.Unlock()
	b.h.mu.Lock()
	delay := b.h.stopDelay
	b.h.mu.Unlock()
	time.Sleep(delay)
	b.die(isolation.ExitInfo{Known: true, Signal: syscall.SIGKILL})
	return os.RemoveAll(b.tmp)
}

// Detach drops the agent's connection, as the real one does: an
// execution under way ends with an error.
func (b *fakeBox) Detach() {
	ch := b.detachedCh()
	b.detachOnce.Do(func() { close(ch) })
}

// detachedCh is closed once the box is detached.
func (b *fakeBox) detachedCh() chan struct{} {
	b.runMu.Lock()
	defer b.runMu.Unlock()
	if b.detached == nil {
		b.detached = make(chan struct{})
	}
	return b.detached
}
func (b *fakeBox) Exited() <-chan struct{} { return b.exited }
func (b *fakeBox) Tmp() string             { return b.tmp }

func (b *fakeBox) StartTimings() isolation.Timings { return isolation.Timings{} }

// DialPort dials what the test serves for the port on the fake host.
func (b *fakeBox) DialPort(ctx context.Context, port int) (net.Conn, error) {
	b.h.mu.Lock()
	addr, ok := b.h.ports[port]
	b.h.mu.Unlock()
	if !ok {
		return nil, syscall.ECONNREFUSED
	}
	var d net.Dialer
	return d.DialContext(ctx, "tcp", addr)
}

func (b *fakeBox) NetNS() (*os.File, error) {
	return os.OpenFile(b.netns, os.O_CREATE|os.O_RDONLY, 0o600)
}

func (b *fakeBox) Started() time.Time { return b.started }
func (b *fakeBox) Exit() isolation.ExitInfo {
	<-b.exited
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.exit
}
