package daemon

import (
	"context"
	"io"
	"os"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/daemon/sandboxfs"
)

// fileAt is the session's folders and where path is in them.
func (d *Daemon) fileAt(ctx context.Context, id, path string) (*sandboxfs.FS, sandboxfs.Root, string, error) {
	root, rel, err := sandboxfs.Split(path)
	if err != nil {
		return nil, 0, "", err
	}
	fs, err := d.filesOf(ctx, id)
	return fs, root, rel, err
}

// filesOf is the file view of a session. /tmp exists only while the
// sandbox runs; /workspace always.
func (d *Daemon) filesOf(ctx context.Context, id string) (*sandboxfs.FS, error) {
	s, err := d.lookupAwake(ctx, id)
	if err != nil {
		return nil, err
	}
	return d.sessionFS(s), nil
}

func (d *Daemon) sessionFS(s *session) *sandboxfs.FS {
	rec := s.Snapshot()
	uid, gid := d.rt.HostOwner(rec.IDBase)
	fs := &sandboxfs.FS{Workspace: d.paths.workspace(rec.ID), UID: uid, GID: gid}
	if sb := s.Sandbox(); sb != nil {
		fs.Tmp = sb.Tmp()
	}
	return fs
}

// PutFile writes a file into the session, creating parent folders.
func (d *Daemon) PutFile(ctx context.Context, id, path string, body io.Reader) (*api.FileWritten, error) {
	fs, root, rel, err := d.fileAt(ctx, id, path)
	if err != nil {
		return nil, err
	}
	n, err := fs.Write(root, rel, body, d.cfg.MaxUploadBytes)
	if err != nil {
		return nil, err
	}
	return &api.FileWritten{Path: root.String() + "/" + rel, Size: n}, nil
}

// PutTar unpacks a tar stream into the folder path (cp -r).
func (d *Daemon) PutTar(ctx context.Context, id, path string, body io.Reader) (*api.FileWritten, error) {
	fs, root, rel, err := d.fileAt(ctx, id, path)
	if err != nil {
		return nil, err
	}
	w, err := fs.WriteTar(root, rel, body, d.cfg.MaxUploadBytes)
	if err != nil {
		return nil, err
	}
	return &api.FileWritten{Path: root.String() + "/" + rel, Size: w.Bytes, Files: w.Files}, nil
}

// GetTar writes path (a folder and what it holds, or a file) to w as a
// tar stream (cp -r).
func (d *Daemon) GetTar(ctx context.Context, id, path string, w io.Writer) error {
	fs, root, rel, err := d.fileAt(ctx, id, path)
	if err != nil {
		return err
	}
	return fs.ReadTar(root, rel, w)
}

// OpenFile opens a file for reading, or lists a folder.
func (d *Daemon) OpenFile(ctx context.Context, id, path string) (*os.File, *api.FileList, error) {
	fs, root, rel, err := d.fileAt(ctx, id, path)
	if err != nil {
		return nil, nil, err
	}
	f, err := fs.Open(root, rel)
	if err != nil {
		return nil, nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	if !fi.IsDir() {
		return f, nil, nil
	}
	defer f.Close()
	list, err := sandboxfs.List(f)
	return nil, list, err
}

// DeleteFile removes a file or a folder.
func (d *Daemon) DeleteFile(ctx context.Context, id, path string) error {
	fs, root, rel, err := d.fileAt(ctx, id, path)
	if err != nil {
		return err
	}
	return fs.Remove(root, rel)
}
