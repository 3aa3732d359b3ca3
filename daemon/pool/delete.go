package pool

import (
	"context"
	"os"

	"github.com/containerd/errdefs"

	"github.com/sandboxd/sandboxd/api"
)

// DeleteTemplate removes a template no session uses, with its pool, and
// its root filesystem if the daemon unpacked it.
func (ts *Templates) DeleteTemplate(ctx context.Context, name string) error {
	ts.ops.Lock()
	defer ts.ops.Unlock()
	caller := ts.o.Caller(ctx)
	ts.mu.Lock()
	t := ts.lookup(caller, name)
	if t == nil || t.adding {
		ts.mu.Unlock()
		// An import whose template was never added leaves a folder; the
		// same call removes it.
		if caller.RequireRoot("remove an import") == nil && checkTemplateName(name) == nil {
			if _, err := os.Stat(ts.importDir(name)); err == nil {
				return os.RemoveAll(ts.importDir(name))
			}
		}
		return errNoTemplate(name)
	}
	if t.def.Builtin {
		ts.mu.Unlock()
		return api.Errorf(errdefs.ErrConflict, "the %s template is built in and cannot be removed: set pool_size in the config to change its pool", name)
	}
	if !caller.MayUse(t.def.OwnerUID) {
		ts.mu.Unlock()
		return api.Errorf(errdefs.ErrPermissionDenied, "template %s belongs to uid %d: only it or root may remove it", name, t.def.OwnerUID)
	}
	ts.mu.Unlock()
	ref := t.Ref()
	if users := ts.o.Host.Users(ref); users > 0 {
		return api.Errorf(errdefs.ErrConflict, "template %s is used by %d session(s): delete them first", name, users)
	}
	ts.mu.Lock()
	delete(ts.byName, ref)
	p := t.pool
	t.pool = nil
	ts.mu.Unlock()
	if p != nil {
		p.close()
	}
	ts.o.Metrics.Forget(ref)
	if err := ts.o.Store.DeleteTemplate(t.def.OwnerUID, t.def.Name); err != nil {
		return err
	}
	_ = ts.o.Host.RemoveImage(t.folder())
	if err := ts.removePackages(t); err != nil {
		return err
	}
	// Imports are root's, by name (only root may import or make a
	// template of a folder).
	if t.def.OwnerUID == 0 && t.def.Rootfs == ts.importRootfs(t.def.Name) {
		if err := os.RemoveAll(ts.importDir(t.def.Name)); err != nil {
			return err
		}
	}
	ts.o.Log.Info("template removed", "template", ref)
	return nil
}
