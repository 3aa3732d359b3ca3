package daemon

import (
	"context"
	"io"
	"os"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/daemon/sandboxfs"
)

// A volume's files are served without a session, as a session's
// workspace is (package sandboxfs: beneath its root, never through a
// symlink out), owned by the ids sandboxes see inside: any session that
// mounts it sees what the API wrote as its own user's.

// volumeFS is the caller's volume name as package sandboxfs serves it, and
// rel the checked path p in it.
func (v Volumes) volumeFS(ctx context.Context, name, p string) (*sandboxfs.FS, string, error) {
	rel, err := sandboxfs.SplitVolume(p)
	if err != nil {
		return nil, "", err
	}
	rec, err := v.lookup(ctx, name)
	if err != nil {
		return nil, "", err
	}
	uid, gid := v.d.rt.HostOwner(0)
	return &sandboxfs.FS{Workspace: v.d.paths.volumeData(rec.VolumeID), UID: uid, GID: gid}, rel, nil
}

// OpenVolumeFile opens a file of a volume for reading, or lists a folder.
func (v Volumes) OpenVolumeFile(ctx context.Context, name, p string) (*os.File, *api.FileList, error) {
	fs, rel, err := v.volumeFS(ctx, name, p)
	if err != nil {
		return nil, nil, err
	}
	return fs.OpenOrList(sandboxfs.Volume, rel)
}

// PutVolumeFile writes a file into a volume, making its parent folders;
// past the volume's size, a 429.
func (v Volumes) PutVolumeFile(ctx context.Context, name, p string, body io.Reader) (*api.FileWritten, error) {
	fs, rel, err := v.volumeFS(ctx, name, p)
	if err != nil {
		return nil, err
	}
	n, err := fs.Write(sandboxfs.Volume, rel, body, v.d.cfg.MaxUploadBytes)
	if err != nil {
		return nil, err
	}
	return &api.FileWritten{Path: "/" + rel, Size: n}, nil
}

// DeleteVolumeFile removes a file or folder of a volume.
func (v Volumes) DeleteVolumeFile(ctx context.Context, name, p string) error {
	fs, rel, err := v.volumeFS(ctx, name, p)
	if err != nil {
		return err
	}
	return fs.Remove(sandboxfs.Volume, rel)
}
