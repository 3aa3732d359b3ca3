package isolation

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"

	"github.com/opencontainers/runtime-spec/specs-go"

	"github.com/sandboxd/sandboxd/cgroups"
	"github.com/sandboxd/sandboxd/seccomp"
)

// Options configure a Runtime.
type Options struct {
	// StateDir holds per-sandbox runtime state: libcontainer's state, each
	// sandbox's root skeleton, /tmp and agent socket. Under --run-dir.
	StateDir string
	// UID and GID run sandboxed code when there is no user namespace: a
	// dedicated id nobody on the host uses.
	UID, GID int
	// UserNS gives every sandbox a user namespace: code runs as InnerUID in
	// it, which is the sandbox's own block of host ids (Spec.IDBase) outside.
	UserNS bool
	// Seccomp is the operator's change to the default filter.
	Seccomp seccomp.Config
	// Cgroups is where sandbox cgroups go.
	Cgroups *cgroups.Tree
	// Monitor, if set, is told of every call the filter refuses.
	Monitor *seccomp.Monitor
	// LXCFSDir is where lxcfs serves per-reader /proc files, bound over
	// each sandbox's own (procview.go); "" turns that off.
	LXCFSDir string
	// Supervisor is the native supervisor on the host (agent.SupervisorBinary,
	// checked with agent.CheckSupervisor), installed with the agent into
	// every image: sandboxes then start with it as PID 1 in the Python
	// supervisor's place, one interpreter a session instead of two. "": the
	// Python supervisor.
	Supervisor string
	// Engines make the engines of the runtimes sandboxes can name
	// (RuntimeRunc, RuntimeRunsc): isolation/runc's and isolation/runsc's.
	// A runtime without one is not configured.
	Engines map[string]NewEngine
}

// Runtime starts sandboxes.
type Runtime struct {
	stateDir string
	etcDir   string
	// etcMu guards etcDone: the users' /etc folders (etcFor) this
	// runtime wrote.
	etcMu    sync.Mutex
	etcDone  map[string]bool
	uid, gid int
	userns   bool
	seccomp  *specs.LinuxSeccomp
	// seccompConfig is Options.Seccomp, for an engine's own form of it.
	seccompConfig seccomp.Config
	monitor       *seccomp.Monitor
	watched       []string
	cgroups       *cgroups.Tree
	host          *Image
	// overlay says sandboxes get their /etc and image folders through
	// overlays, which hide those folders' host paths (see hostview.go);
	// empty is the overlays' second, empty, layer.
	overlay bool
	empty   string
	// lxcfsDir is Options.LXCFSDir.
	lxcfsDir string
	// supervisor is Options.Supervisor.
	supervisor string
	// cpus gives sandboxes their cpuset (cpuset.go).
	cpus *cpuPicker
	// engines run the sandboxes of each runtime that can run them here;
	// problems say why the others cannot.
	engines  map[string]Engine
	problems map[string]string
}

// runtimes are the runtimes a Spec can name, in the order Info lists them.
var runtimes = []string{RuntimeRunc, RuntimeRunsc}

// NewRuntime checks the host has what sandboxes need and prepares the
// shared parts (the synthetic /etc).
func NewRuntime(o Options) (*Runtime, error) {
	if o.UID <= 0 || o.GID <= 0 {
		return nil, errors.New("sandboxed code must not run as root: set a sandbox uid and gid above 0")
	}
	profile, err := seccomp.Profile(o.Seccomp)
	if err != nil {
		return nil, err
	}
	r := &Runtime{
		stateDir:      o.StateDir,
		etcDir:        filepath.Join(o.StateDir, "etc"),
		uid:           o.UID,
		gid:           o.GID,
		userns:        o.UserNS,
		seccomp:       profile,
		seccompConfig: o.Seccomp,
		monitor:       o.Monitor,
		watched:       seccomp.Watched(o.Seccomp),
		cgroups:       o.Cgroups,
		empty:         filepath.Join(o.StateDir, "empty"),
		lxcfsDir:      o.LXCFSDir,
		supervisor:    o.Supervisor,
		cpus:          newCPUPicker(o.Cgroups != nil && o.Cgroups.CPUSet()),
		engines:       map[string]Engine{},
		problems:      map[string]string{},
	}
	for _, d := range []string{r.stateDir, filepath.Join(r.stateDir, "sandboxes")} {
		if err := os.MkdirAll(d, 0o711); err != nil {
			return nil, err
		}
	}
	if err := os.MkdirAll(r.empty, 0o755); err != nil {
		return nil, err
	}
	r.overlay = overlaySupported(r.stateDir, r.empty) == nil
	for _, name := range runtimes {
		newEngine := o.Engines[name]
		if newEngine == nil {
			r.problems[name] = name + " is not configured"
			continue
		}
		e, err := newEngine(r)
		if err != nil && name == RuntimeRunc {
			// runc needs nothing a host may lack: its folder not made is
			// the runtime's failure, as the runtime's own folders are.
			return nil, err
		}
		if err != nil {
			r.problems[name] = err.Error()
			continue
		}
		r.engines[name] = e
	}
	if r.host, err = r.hostImage(); err != nil {
		return nil, err
	}
	return r, nil
}

// findPython finds a python3 in the folders sandboxes see, since the host's
// PATH may point into a user's home (pyenv and the like) that they do not.
func findPython() (string, error) {
	for _, p := range []string{"/usr/bin/python3", "/usr/local/bin/python3", "/bin/python3"} {
		if fi, err := os.Stat(p); err == nil && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	if p, err := exec.LookPath("python3"); err == nil {
		return "", fmt.Errorf("python3 found at %s, but the sandbox shows only /usr and /bin: install the python3 package", p)
	}
	return "", errors.New("the python template needs python3 on the host: install the python3 package")
}

// InnerUID and InnerGID run sandboxed code inside a user namespace.
const (
	InnerUID = 1000
	InnerGID = 1000
)

// UID is the uid sandboxed code runs as, as it sees itself.
func (r *Runtime) UID() int {
	if r.userns {
		return InnerUID
	}
	return r.uid
}

// GID is the gid sandboxed code runs as, as it sees itself.
func (r *Runtime) GID() int {
	if r.userns {
		return InnerGID
	}
	return r.gid
}

// HostOwner is the host uid and gid that sandboxed code of a sandbox with
// id block idBase runs as, and so owns its files.
func (r *Runtime) HostOwner(idBase uint32) (uid, gid int) {
	if r.userns {
		return int(idBase) + InnerUID, int(idBase) + InnerGID
	}
	return r.uid, r.gid
}

// Info describes the runtime, for /v1/info and the daemon's shutdown.
type Info struct {
	// Name is the runtime's name in the API.
	Name string
	// Runtimes are the runtimes a Spec can name (runc, runsc), usable or
	// not.
	Runtimes []RuntimeInfo
	// CgroupVersion is 1 or 2.
	CgroupVersion int
	// InScope says sandboxes live in a systemd scope of their own, which
	// outlives the daemon's service (see package cgroups).
	InScope bool
	// ShowsHostPaths says the sandboxes' mount tables show the host paths
	// of their /etc and image folders: without overlayfs (hostview.go).
	ShowsHostPaths bool
	// ProcViewProblem says why sandboxes show the host's /proc/meminfo,
	// cpuinfo, stat and uptime instead of their own ("": lxcfs serves
	// them; see procview.go).
	ProcViewProblem string
}

// RuntimeInfo is one runtime: usable, or why not.
type RuntimeInfo struct {
	Name     string
	Usable   bool
	Problem  string
	Version  string
	Platform string
	// Networks says its sandboxes can join a network namespace.
	Networks bool
	// NetworkAtStart says a sandbox takes its network when it starts
	// (gVisor's netstack takes the links its namespace has then): a
	// sandbox that is to have one gets a namespace with its link made
	// (Spec.NetNS), and one started without can never have one.
	NetworkAtStart bool
}

// Info describes r.
func (r *Runtime) Info() Info {
	var rs []RuntimeInfo
	for _, name := range runtimes {
		if e, ok := r.engines[name]; ok {
			rs = append(rs, e.Info())
		} else {
			rs = append(rs, RuntimeInfo{Name: name, Problem: r.problems[name]})
		}
	}
	return Info{Name: "libcontainer", Runtimes: rs, CgroupVersion: int(r.cgroups.Version), InScope: r.cgroups.Scope != "", ShowsHostPaths: !r.overlay, ProcViewProblem: r.ProcViewProblem()}
}

// Close lets go of the cgroup folder sandboxes go in, removing it once no
// sandbox is left there. Sandboxes still running stay, for the next
// daemon.
func (r *Runtime) Close() error {
	var errs []error
	for _, name := range runtimes {
		if e, ok := r.engines[name]; ok {
			errs = append(errs, e.Close())
		}
	}
	return errors.Join(append(errs, r.cgroups.Remove())...)
}
