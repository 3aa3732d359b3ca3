package daemon

import (
	"context"
	"strconv"

	"github.com/sandboxd/sandboxd/daemon/sandboxfs"
	"github.com/sandboxd/sandboxd/isolation"
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
	fs.Names = etcNames(uid, gid, d.rt.UID(), d.tmpl.UserOf(rec.Template).Name)
	if sb := s.Sandbox(); sb != nil {
		fs.Tmp = sb.Tmp()
		fs.Done = sb.Exited()
	}
	return fs
}

// etcNames names a file's host owner and group as the sandbox does: its
// ids are the host's less the sandbox's offset (hostUID, the sandbox
// user's host uid, less innerUID, its own; the same for groups, as the
// id map is one block), named by the /etc every sandbox gets
// (isolation.WriteEtc); an id it has no name for is the number it sees,
// and one outside its id map is nobody, as the kernel shows it.
func etcNames(hostUID, hostGID, innerUID int, user string) func(uid, gid uint32) (string, string) {
	off := hostUID - innerUID
	users, groups := isolation.EtcNames(innerUID, hostGID-off, user)
	name := func(names map[int]string, id uint32) string {
		in := int(id) - off
		if in < 0 {
			in = 65534 // outside its id map: the kernel's overflow id
		}
		if n, ok := names[in]; ok {
			return n
		}
		return strconv.Itoa(in)
	}
	return func(uid, gid uint32) (string, string) { return name(users, uid), name(groups, gid) }
}
