package pool

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/containerd/errdefs"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/internal/logging"
	"github.com/sandboxd/sandboxd/isolation"
)

// buildFolder is where a template's trial sandbox installs its packages,
// inside its /workspace.
const buildFolder = ".template-packages"

// buildPackages installs template t's packages (see
// isolation.WritePackages) in a sandbox of it, without its preload code,
// whose network reaches the package index alone (Host.Packages), and
// keeps them in the template's packages folder.
func (ts *Templates) buildPackages(ctx context.Context, t *Template) error {
	name := t.Ref()
	dst := ts.packagesDir(t.folder())
	// An add the daemon did not live to finish may have left one.
	if err := os.RemoveAll(dst); err != nil {
		return err
	}
	t.building = true
	s, err := ts.o.Sandboxes.Start(ctx, t, false)
	t.building = false
	if err != nil {
		return api.Errorf(errdefs.ErrInvalidArgument, "template %s cannot start: %v", name, err)
	}
	defer func() {
		if err := ts.o.Sandboxes.Destroy(s); err != nil {
			logging.From(ctx).Warn("remove a template's build sandbox", "template", name, "err", err)
		}
	}()
	// Stopped: nothing changes the folder while it is copied.
	workspace, index, err := ts.o.Host.Packages(ctx, s, t, buildFolder)
	if err != nil {
		return err
	}
	if err := isolation.WritePackages(workspace, buildFolder, dst); err != nil {
		return fmt.Errorf("template %s: keep its packages: %w", name, err)
	}
	t.packages = dst
	logging.From(ctx).Info("template packages installed", "template", name, "packages", strings.Join(t.def.Packages, " "), "index", index)
	return nil
}

// removePackages removes a template's packages folder.
func (ts *Templates) removePackages(t *Template) error {
	return os.RemoveAll(ts.packagesDir(t.folder()))
}

// reconcilePackages removes the packages folders of templates the daemon
// does not know: added by a daemon that died before it recorded them.
func (ts *Templates) reconcilePackages() {
	ents, _ := os.ReadDir(ts.o.Packages)
	for _, e := range ents {
		if t, ok := ts.byName[folderRef(e.Name())]; ok && len(t.def.Packages) > 0 && t.folder() == e.Name() {
			continue
		}
		if err := os.RemoveAll(ts.packagesDir(e.Name())); err != nil {
			ts.o.Log.Warn("remove the packages of a template never added", "folder", e.Name(), "err", err)
		}
	}
}

// Reconcile removes what templates the daemon does not know left on
// disk: imports never added, packages of adds never finished.
func (ts *Templates) Reconcile() {
	ts.reconcileImports()
	ts.reconcilePackages()
}
