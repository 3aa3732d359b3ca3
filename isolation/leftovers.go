package isolation

import (
	"errors"
	"os"
	"path/filepath"
)

// What a daemon that did not stop its sandboxes left on the host: found
// (Leftovers) when the daemon reconciles its database with the host, and
// removed (Cleanup) then, or when a sandbox cannot be restored.

// Cleanup removes whatever is left of sandbox id after a daemon that did
// not stop it: its processes, cgroup, runtime state (each engine's) and
// folder — also the half of a start cut short.
func (r *Runtime) Cleanup(id string) error {
	r.cpus.release(id)
	var errs []error
	for _, name := range runtimes {
		if e, ok := r.engines[name]; ok {
			errs = append(errs, e.Cleanup(id))
		}
	}
	// A daemon that died while the sandbox started may have left its view
	// mounted: unmounted first, so that RemoveAll stays in the folder.
	p := r.pathsOf(id)
	errs = append(errs, r.cgroups.RemoveSandbox(id), unmountVolumes(p))
	if err := unmountView(p); err != nil {
		errs = append(errs, err)
	} else {
		errs = append(errs, os.RemoveAll(p.dir))
	}
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
	ents, err := os.ReadDir(filepath.Join(r.stateDir, "sandboxes"))
	if err != nil && !os.IsNotExist(err) {
		return nil, err
	}
	for _, e := range ents {
		if e.IsDir() {
			seen[e.Name()] = true
		}
	}
	for _, name := range runtimes {
		if e, ok := r.engines[name]; ok {
			ids, err := e.Leftovers()
			if err != nil {
				return nil, err
			}
			for _, id := range ids {
				seen[id] = true
			}
		}
	}
	out := make([]string, 0, len(seen))
	for id := range seen {
		out = append(out, id)
	}
	return out, nil
}
