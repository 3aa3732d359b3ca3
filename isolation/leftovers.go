package isolation

import (
	"errors"
	"os"
	"path/filepath"
	"time"

	"github.com/opencontainers/runc/libcontainer"
	"golang.org/x/sys/unix"
)

// What a daemon that did not stop its sandboxes left on the host: found
// (Leftovers) when the daemon reconciles its database with the host, and
// removed (Cleanup) then, or when a sandbox cannot be restored.

// Cleanup removes whatever is left of sandbox id after a daemon that did
// not stop it: its processes, cgroup, libcontainer state and folder — also
// the half of a start cut short, which libcontainer cannot load.
func (r *Runtime) Cleanup(id string) error {
	r.cpus.release(id)
	var errs []error
	if c, err := libcontainer.Load(r.lcRoot, id); err == nil {
		if err := c.Signal(unix.SIGKILL); err != nil && !errors.Is(err, libcontainer.ErrNotRunning) {
			errs = append(errs, err)
		}
		for i := 0; i < 100; i++ {
			if st, err := c.Status(); err != nil || st == libcontainer.Stopped {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		errs = append(errs, retryBusy(c.Destroy))
	}
	// A daemon that died while the sandbox started may have left its view
	// mounted: unmounted first, so that RemoveAll stays in the folder.
	p := r.pathsOf(id)
	if r.runsc != nil {
		if cg, err := r.runscCgroup(id, nil); err == nil {
			errs = append(errs, r.runsc.remove(id, cg))
		}
	}
	errs = append(errs, r.cgroups.RemoveSandbox(id), os.RemoveAll(filepath.Join(r.lcRoot, id)), unmountView(p), os.RemoveAll(p.dir))
	return errors.Join(errs...)
}

// CgroupsWritable checks that a sandbox's cgroup can be made now (a
// health check).
func (r *Runtime) CgroupsWritable() error { return r.cgroups.Writable() }

// Leftovers lists the sandboxes that have runtime state or a cgroup on this
// host.
func (r *Runtime) Leftovers() ([]string, error) {
	seen := map[string]bool{}
	cgs, err := r.cgroups.Sandboxes()
	if err != nil {
		return nil, err
	}
	for _, id := range cgs {
		seen[id] = true
	}
	for _, dir := range []string{filepath.Join(r.stateDir, "sandboxes"), r.lcRoot} {
		ents, err := os.ReadDir(dir)
		if err != nil && !os.IsNotExist(err) {
			return nil, err
		}
		for _, e := range ents {
			if e.IsDir() {
				seen[e.Name()] = true
			}
		}
	}
	out := make([]string, 0, len(seen))
	for id := range seen {
		out = append(out, id)
	}
	return out, nil
}
