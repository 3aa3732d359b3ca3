package daemon

import (
	"context"
	"fmt"
	"os"
	"path"
	"strings"

	"github.com/containerd/errdefs"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/internal/logging"
	"github.com/sandboxd/sandboxd/isolation"
)

// buildFolder is where a template's trial sandbox installs its packages,
// inside its /workspace.
const buildFolder = ".template-packages"

// checkTemplatePackages checks a template's packages: requirements pip
// takes, an index, and a daemon that can reach it.
func (d *Daemon) checkTemplatePackages(def *api.Template) error {
	if len(def.Packages) == 0 {
		if def.IndexURL != "" {
			return errdefs.ErrInvalidArgument.WithMessage("index_url without packages: name the packages to install from it")
		}
		return nil
	}
	if _, err := d.checkPackages(def.Packages, def.IndexURL); err != nil {
		return err
	}
	if d.net == nil {
		return api.Errorf(errdefs.ErrUnavailable, "a template's packages need a network to install them, which this daemon cannot give: %s", d.netOff)
	}
	return nil
}

// buildPackages installs template t's packages (see
// isolation.WritePackages) in a sandbox of it, without its preload code,
// whose network reaches the package index alone, and keeps them in the
// template's packages folder.
func (d *Daemon) buildPackages(ctx context.Context, t *template) error {
	name := t.ref()
	dst := d.paths.templatePackages(t.folder())
	// An add the daemon did not live to finish may have left one.
	if err := os.RemoveAll(dst); err != nil {
		return err
	}
	// Checked with the template (checkTemplatePackages).
	u, err := d.packageIndex(t.def.IndexURL)
	if err != nil {
		return err
	}
	s := d.trialSession(t)
	t.building = true
	err = d.startSandbox(ctx, s, false)
	t.building = false
	defer func() {
		if err := d.destroySession(s); err != nil {
			logging.From(ctx).Warn("remove a template's build sandbox", "template", name, "err", err)
		}
	}()
	if err != nil {
		return api.Errorf(errdefs.ErrInvalidArgument, "template %s cannot start: %v", name, err)
	}
	closeIndex, err := d.openIndex(ctx, s, u)
	if err != nil {
		return err
	}
	e, err := d.exec(ctx, s, d.pipRequest(u, t.def.Packages, path.Join("/workspace", buildFolder)), nil)
	closeIndex()
	if err != nil {
		return err
	}
	if e.Status != api.StatusOK {
		return api.Errorf(errdefs.ErrInvalidArgument, "template %s: installing its packages failed (%s, exit code %d):\n%s", name, e.Status, e.ExitCode, outputTail(e.Stdout+e.Stderr, 2000))
	}
	// Stopped: nothing changes the folder while it is copied.
	if sb := s.TakeSandbox(); sb != nil {
		if err := sb.Stop(); err != nil {
			return err
		}
	}
	if err := isolation.WritePackages(d.paths.workspace(s.ID()), buildFolder, dst); err != nil {
		return fmt.Errorf("template %s: keep its packages: %w", name, err)
	}
	t.packages = dst
	logging.From(ctx).Info("template packages installed", "template", name, "packages", strings.Join(t.def.Packages, " "), "index", u.String())
	return nil
}

// removePackages removes a template's packages folder.
func (d *Daemon) removePackages(t *template) error {
	return os.RemoveAll(d.paths.templatePackages(t.folder()))
}

// reconcilePackages removes the packages folders of templates the daemon
// does not know: added by a daemon that died before it recorded them.
func (d *Daemon) reconcilePackages() {
	ents, _ := os.ReadDir(d.paths.packages())
	for _, e := range ents {
		if t, ok := d.tmpl.byName[folderRef(e.Name())]; ok && len(t.def.Packages) > 0 && t.folder() == e.Name() {
			continue
		}
		if err := os.RemoveAll(d.paths.templatePackages(e.Name())); err != nil {
			d.log.Warn("remove the packages of a template never added", "folder", e.Name(), "err", err)
		}
	}
}

// outputTail is the end of an install's output, for an error message.
func outputTail(out string, n int) string {
	out = strings.TrimSpace(out)
	if len(out) > n {
		out = "…" + out[len(out)-n:]
	}
	return out
}
