package sandboxfs

import (
	"context"
	"io"
	"os"
	"sync"

	"github.com/sandboxd/sandboxd/api"
)

// Files serves the API's file calls (server.FileBackend, by shape) over
// the sessions' folders: it owns how a path becomes a file of a session
// and what an upload may weigh; which session a caller may reach, and
// waking a paused one first, stay the daemon's (Of).
type Files struct {
	// Of is the file view of session id, as the caller in ctx may use it
	// (a paused session resumed first).
	Of func(ctx context.Context, id string) (*FS, error)
	// MaxUpload bounds a file or tar upload (max_upload_bytes).
	MaxUpload int64

	mu sync.Mutex
	// streams counts each session's open watches, by workspace.
	streams map[string]int
}

// at is the session's folders and where path is in them.
func (fl *Files) at(ctx context.Context, id, path string) (*FS, Root, string, error) {
	root, rel, err := Split(path)
	if err != nil {
		return nil, 0, "", err
	}
	fs, err := fl.Of(ctx, id)
	return fs, root, rel, err
}

// PutFile writes a file into the session, creating parent folders.
func (fl *Files) PutFile(ctx context.Context, id, path string, body io.Reader) (*api.FileWritten, error) {
	return fl.PutFileMeta(ctx, id, path, body, nil)
}

// PutFileMeta is PutFile, the file given user metadata (FS.WriteMeta).
func (fl *Files) PutFileMeta(ctx context.Context, id, path string, body io.Reader, meta map[string]string) (*api.FileWritten, error) {
	fs, root, rel, err := fl.at(ctx, id, path)
	if err != nil {
		return nil, err
	}
	n, err := fs.WriteMeta(root, rel, body, fl.MaxUpload, meta)
	if err != nil {
		return nil, err
	}
	return &api.FileWritten{Path: root.String() + "/" + rel, Size: n}, nil
}

// PutTar unpacks a tar stream into the folder path (cp -r).
func (fl *Files) PutTar(ctx context.Context, id, path string, body io.Reader) (*api.FileWritten, error) {
	fs, root, rel, err := fl.at(ctx, id, path)
	if err != nil {
		return nil, err
	}
	w, err := fs.WriteTar(root, rel, body, fl.MaxUpload)
	if err != nil {
		return nil, err
	}
	return &api.FileWritten{Path: root.String() + "/" + rel, Size: w.Bytes, Files: w.Files}, nil
}

// GetTar writes path (a folder and what it holds, or a file) to w as a
// tar stream (cp -r).
func (fl *Files) GetTar(ctx context.Context, id, path string, w io.Writer) error {
	fs, root, rel, err := fl.at(ctx, id, path)
	if err != nil {
		return err
	}
	return fs.ReadTar(root, rel, w)
}

// OpenFile opens a file for reading, or lists a folder.
func (fl *Files) OpenFile(ctx context.Context, id, path string) (*os.File, *api.FileList, error) {
	fs, root, rel, err := fl.at(ctx, id, path)
	if err != nil {
		return nil, nil, err
	}
	return fs.OpenOrList(root, rel)
}

// DeleteFile removes a file or a folder.
func (fl *Files) DeleteFile(ctx context.Context, id, path string) error {
	fs, root, rel, err := fl.at(ctx, id, path)
	if err != nil {
		return err
	}
	return fs.Remove(root, rel)
}
