package sandboxfs

import (
	"context"

	"github.com/containerd/errdefs"
	"golang.org/x/sys/unix"

	"github.com/sandboxd/sandboxd/api"
)

// StatFile describes a file, folder or symlink (not followed).
func (fl *Files) StatFile(ctx context.Context, id, path string) (*api.FileStat, error) {
	fs, root, rel, err := fl.at(ctx, id, path)
	if err != nil {
		return nil, err
	}
	return fs.Stat(root, rel)
}

// MakeFolder makes a folder and its parents (mkdir -p).
func (fl *Files) MakeFolder(ctx context.Context, id, path string) (*api.FolderMade, error) {
	fs, root, rel, err := fl.at(ctx, id, path)
	if err != nil {
		return nil, err
	}
	return fs.Mkdir(root, rel)
}

// MoveFile renames a file or folder; it never replaces one.
func (fl *Files) MoveFile(ctx context.Context, id, from, to string) (*api.FileStat, error) {
	root, rel, err := split("from", from)
	if err != nil {
		return nil, err
	}
	toRoot, toRel, err := split("to", to)
	if err != nil {
		return nil, err
	}
	fs, err := fl.Of(ctx, id)
	if err != nil {
		return nil, err
	}
	return fs.Move(root, rel, toRoot, toRel)
}

// ListFolder lists a folder to depth levels (1: its own entries).
func (fl *Files) ListFolder(ctx context.Context, id, path string, depth int) (*api.FileList, error) {
	if err := CheckDepth(depth); err != nil {
		return nil, err
	}
	fs, root, rel, err := fl.at(ctx, id, path)
	if err != nil {
		return nil, err
	}
	f, err := fs.Open(root, rel)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return nil, err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return nil, api.Errorf(errdefs.ErrInvalidArgument, "%s is not a folder: depth lists folders", join(root, rel))
	}
	return ListDepth(f, join(root, rel), depth, MaxEntries)
}

// WatchFiles reports what changes in a folder of a session (and below it,
// recursive) as it happens: see FS.Watch. A session serves at most
// MaxWatchStreams at once.
func (fl *Files) WatchFiles(ctx context.Context, id, path string, recursive bool, opened func(), send func(api.FileEvent) error) error {
	fs, root, rel, err := fl.at(ctx, id, path)
	if err != nil {
		return err
	}
	release, err := fl.watchStream(fs.Workspace)
	if err != nil {
		return err
	}
	defer release()
	return fs.Watch(ctx, root, rel, recursive, opened, send)
}

// watchStream counts a watch of the session whose workspace is key.
func (fl *Files) watchStream(key string) (func(), error) {
	fl.mu.Lock()
	defer fl.mu.Unlock()
	if fl.streams == nil {
		fl.streams = map[string]int{}
	}
	if fl.streams[key] >= MaxWatchStreams {
		return nil, api.Errorf(errdefs.ErrResourceExhausted, "the session has %d watches open already: close one first", MaxWatchStreams)
	}
	fl.streams[key]++
	return func() {
		fl.mu.Lock()
		defer fl.mu.Unlock()
		if fl.streams[key]--; fl.streams[key] == 0 {
			delete(fl.streams, key)
		}
	}, nil
}
