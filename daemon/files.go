package daemon

import (
	"context"

	"github.com/sandboxd/sandboxd/daemon/sandboxfs"
)

// Files serves the API's file calls (package sandboxfs owns them): the
// daemon says which session a caller reaches, awake.
func (d *Daemon) Files() *sandboxfs.Files {
	return &sandboxfs.Files{
		Of: func(ctx context.Context, id string) (*sandboxfs.FS, error) {
			s, err := d.lookupAwake(ctx, id)
			if err != nil {
				return nil, err
			}
			return d.sessionFS(s), nil
		},
		MaxUpload: d.cfg.MaxUploadBytes,
	}
}

// sessionFS is the file view of a session. /tmp exists only while the
// sandbox runs; /workspace always.
func (d *Daemon) sessionFS(s *session) *sandboxfs.FS {
	rec := s.Snapshot()
	uid, gid := d.rt.HostOwner(rec.IDBase)
	fs := &sandboxfs.FS{Workspace: d.paths.workspace(rec.ID), UID: uid, GID: gid}
	if sb := s.Sandbox(); sb != nil {
		fs.Tmp = sb.Tmp()
	}
	return fs
}
