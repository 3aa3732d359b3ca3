package pool

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
func (ts *Templates) ImportRootfs(ctx context.Context, name string, body io.Reader) (*api.RootfsImported, error) {
	if err := ts.o.Caller(ctx).RequireRoot("import a root filesystem"); err != nil {
		return nil, err
	}
	if err := checkTemplateName(name); err != nil {
		return nil, err
	}
	ts.ops.Lock()
	defer ts.ops.Unlock()
	// Imports are root's: the template in the way is root's of the name
	// (a key of byName is a reference, root's are their name).
	ts.mu.Lock()
	_, exists := ts.byName[api.TemplateRef(0, name)]
	ts.mu.Unlock()
	if exists {
		return nil, api.Errorf(errdefs.ErrConflict, "template %s exists: remove it first to replace it", name)
	}
	if err := os.MkdirAll(ts.o.Imports, 0o711); err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp(ts.o.Imports, "."+name+".import-")
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
	res, err := unpack.Tar(ctx, body, root, unpack.Options{MaxBytes: ts.o.Config.MaxTemplateMB << 20, MaxEntries: maxImportEntries})
	if err != nil {
		if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) {
			return nil, api.Errorf(errdefs.ErrResourceExhausted, "the disk of %s is full: free space and import again", ts.o.Config.DataDir)
		}
		return nil, importError(err)
	}
	if err := os.RemoveAll(ts.importDir(name)); err != nil {
		return nil, err
	}
	if err := os.Rename(tmp, ts.importDir(name)); err != nil {
		return nil, err
	}
	ts.o.Log.Info("root filesystem imported", "template", name, "entries", res.Entries, "bytes", res.Bytes, "skipped", res.Skipped)
	return &api.RootfsImported{Name: name, Rootfs: ts.importRootfs(name), Files: res.Entries, Bytes: res.Bytes, Skipped: res.Skipped}, nil
}

// importDir is the folder of the import for the template name; its
// rootfs folder is importRootfs.
func (ts *Templates) importDir(name string) string { return filepath.Join(ts.o.Imports, name) }

func (ts *Templates) importRootfs(name string) string {
	return filepath.Join(ts.importDir(name), "rootfs")
}

// reconcileImports removes unpacked root filesystems no template uses:
// imports never added, and ones a daemon killed mid-import left.
func (ts *Templates) reconcileImports() {
	ents, err := os.ReadDir(ts.o.Imports)
	if err != nil {
		return
	}
	for _, e := range ents {
		if t, ok := ts.byName[api.TemplateRef(0, e.Name())]; ok && t.def.Rootfs == ts.importRootfs(e.Name()) {
			continue
		}
		if err := os.RemoveAll(filepath.Join(ts.o.Imports, e.Name())); err != nil {
			ts.o.Log.Warn("remove an unused root filesystem", "folder", e.Name(), "err", err)
		}
	}
}

// importError is an error of unpacking a root filesystem as the API
// answers it: an archive over a bound is the API's payload too large, with
// unpack's message; unpack's other classes are errdefs', which the API
// maps itself.
func importError(err error) error {
	if errors.Is(err, unpack.ErrTooLarge) {
		return api.ErrPayloadTooLarge.WithMessage(err.Error())
	}
	return err
}
