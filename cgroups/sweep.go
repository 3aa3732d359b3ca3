package cgroups

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Sandboxes lists the sandbox cgroups below the daemon's folder, in any
// hierarchy: a daemon killed in the middle of a start or a delete can leave
// one that no sandbox owns.
func (t *Tree) Sandboxes() ([]string, error) {
	dirs, err := t.dirs()
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	for _, d := range dirs {
		ents, err := os.ReadDir(d)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, err
		}
		for _, e := range ents {
			// A dot name is Writable's probe, never a sandbox's.
			if e.IsDir() && !strings.HasPrefix(e.Name(), ".") {
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

// RemoveSandbox removes sandbox id's cgroup in every hierarchy, killing
// whatever still runs in it. Only for sandboxes libcontainer no longer
// knows; the others it removes itself.
func (t *Tree) RemoveSandbox(id string) error {
	if id == "" || strings.ContainsAny(id, "/.") {
		return fmt.Errorf("bad sandbox id %q", id)
	}
	dirs, err := t.dirs()
	if err != nil {
		return err
	}
	var errs []error
	for _, d := range dirs {
		errs = append(errs, removeKilling(filepath.Join(d, id)))
	}
	return errors.Join(errs...)
}

// removeKilling kills the processes of cgroup dir (and of any child it
// has), then removes it, retrying while the kernel lets go of them.
func removeKilling(dir string) error {
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	subs, _ := os.ReadDir(dir)
	for _, e := range subs {
		if e.IsDir() {
			if err := removeKilling(filepath.Join(dir, e.Name())); err != nil {
				return err
			}
		}
	}
	var err error
	for i := 0; i < 100; i++ {
		b, _ := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
		for _, f := range strings.Fields(string(b)) {
			if pid, perr := strconv.Atoi(f); perr == nil && pid > 0 {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		if err = os.Remove(dir); err == nil || errors.Is(err, os.ErrNotExist) {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("remove cgroup %s: %w", dir, err)
}

// Writable checks that the daemon's sandbox folder takes a new cgroup in
// every hierarchy it uses, as a sandbox's start needs: it makes a probe
// cgroup there and removes it. The folder itself is the daemon's (Remove
// takes it away once no sandbox is left).
func (t *Tree) Writable() error {
	dirs, err := t.dirs()
	if err != nil {
		return err
	}
	name := fmt.Sprintf(".health-%d", os.Getpid())
	var errs []error
	for _, d := range dirs {
		p := filepath.Join(d, name)
		if err := os.MkdirAll(p, 0o755); err != nil {
			errs = append(errs, fmt.Errorf("cgroup folder %s takes no new cgroup: %w", d, errors.Unwrap(err)))
			continue
		}
		if err := os.Remove(p); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
