package daemon

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"syscall"

	"github.com/containerd/errdefs"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/isolation/unpack"
)

// maxImportEntries bounds the entries of one root filesystem tarball.
const maxImportEntries = 2 << 20

// ImportRootfs unpacks a root filesystem tarball (plain or gzip) for the
// template name, which must not exist yet: the next step is AddTemplate
// with the answer's rootfs. Only root may import. An earlier import for
// the same name that no template took is replaced.
func (d *Daemon) ImportRootfs(ctx context.Context, name string, body io.Reader) (*api.RootfsImported, error) {
	if err := callerFrom(ctx).requireRoot("import a root filesystem"); err != nil {
		return nil, err
	}
	if err := checkTemplateName(name); err != nil {
		return nil, err
	}
	d.tmpl.ops.Lock()
	defer d.tmpl.ops.Unlock()
	// Imports are root's: the template in the way is root's of the name
	// (a key of byName is a reference, root's are their name).
	d.tmpl.mu.Lock()
	_, exists := d.tmpl.byName[api.TemplateRef(0, name)]
	d.tmpl.mu.Unlock()
	if exists {
		return nil, api.Errorf(errdefs.ErrConflict, "template %s exists: remove it first to replace it", name)
	}
	if err := os.MkdirAll(d.paths.imports(), 0o711); err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp(d.paths.imports(), "."+name+".import-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	if err := os.Chmod(tmp, 0o711); err != nil {
		return nil, err
	}
	root := filepath.Join(tmp, "rootfs")
	if err := os.Mkdir(root, 0o700); err != nil {
		return nil, err
	}
	res, err := unpack.Tar(ctx, body, root, unpack.Options{MaxBytes: d.cfg.MaxTemplateMB << 20, MaxEntries: maxImportEntries})
	if err != nil {
		if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) {
			return nil, api.Errorf(errdefs.ErrResourceExhausted, "the disk of %s is full: free space and import again", d.cfg.DataDir)
		}
		return nil, importError(err)
	}
	if err := os.RemoveAll(d.paths.importDir(name)); err != nil {
		return nil, err
	}
	if err := os.Rename(tmp, d.paths.importDir(name)); err != nil {
		return nil, err
	}
	d.log.Info("root filesystem imported", "template", name, "entries", res.Entries, "bytes", res.Bytes, "skipped", res.Skipped)
	return &api.RootfsImported{Name: name, Rootfs: d.paths.importRootfs(name), Files: res.Entries, Bytes: res.Bytes, Skipped: res.Skipped}, nil
}

// reconcileImports removes unpacked root filesystems no template uses:
// imports never added, and ones a daemon killed mid-import left.
func (d *Daemon) reconcileImports() {
	ents, err := os.ReadDir(d.paths.imports())
	if err != nil {
		return
	}
	for _, e := range ents {
		if t, ok := d.tmpl.byName[api.TemplateRef(0, e.Name())]; ok && t.def.Rootfs == d.paths.importRootfs(e.Name()) {
			continue
		}
		if err := os.RemoveAll(filepath.Join(d.paths.imports(), e.Name())); err != nil {
			d.log.Warn("remove an unused root filesystem", "folder", e.Name(), "err", err)
		}
	}
}
