package sandboxfs

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"unsafe"

	"github.com/containerd/errdefs"
	"golang.org/x/sys/unix"

	"github.com/sandboxd/sandboxd/api"
)

// Bounds of watching, so that one client cannot take the host's inotify
// watches (a per-user budget the whole daemon shares) or its fds.
const (
	// MaxWatches is the most folders one recursive watch follows.
	MaxWatches = 1024
	// MaxWatchStreams is the most watches one session serves at once.
	MaxWatchStreams = 8
)

// watchMask is what a watch reports of each watched folder.
const watchMask = unix.IN_CREATE | unix.IN_MODIFY | unix.IN_DELETE | unix.IN_ATTRIB |
	unix.IN_MOVED_FROM | unix.IN_MOVED_TO | unix.IN_DELETE_SELF | unix.IN_MOVE_SELF | unix.IN_ONLYDIR

// watcher is one watch: an inotify instance over a folder and, recursive,
// the folders below it. Folders are opened beneath the root's fd, so a
// symlink never takes a watch outside.
type watcher struct {
	ino       *os.File // the inotify fd, pollable: Close ends a Read
	root      int      // the root's fd, to open new folders beneath
	r         Root
	top       int              // the watched folder's wd
	paths     map[int32]string // wd → path relative to the root
	recursive bool
	max       int
}

// Watch reports what changes in the folder rel (and, recursive, in the
// folders below it) to send, until ctx ends, the sandbox ends (f.Done),
// the folder goes, or send fails. opened is called once the watch is set,
// before any event: an error before it is an answer, after it the end of
// the stream.
func (f *FS) Watch(ctx context.Context, r Root, rel string, recursive bool, opened func(), send func(api.FileEvent) error) error {
	return f.watch(ctx, r, rel, recursive, MaxWatches, opened, send)
}

func (f *FS) watch(ctx context.Context, r Root, rel string, recursive bool, max int, opened func(), send func(api.FileEvent) error) error {
	if f.Done == nil {
		return api.Errorf(errdefs.ErrConflict, "a watch needs the session running: start it first")
	}
	root, err := f.rootDir(r)
	if err != nil {
		return err
	}
	defer unix.Close(root)
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		if errors.Is(err, unix.EMFILE) || errors.Is(err, unix.ENFILE) {
			return api.Errorf(errdefs.ErrResourceExhausted, "the host has no inotify instance left for a watch: try again later")
		}
		return err
	}
	w := &watcher{ino: os.NewFile(uintptr(fd), "inotify"), root: root, r: r, paths: map[int32]string{}, recursive: recursive, max: max}
	defer w.ino.Close()
	top, err := w.add(rel)
	if err != nil {
		return err
	}
	w.top = top
	if recursive {
		if err := w.addBelow(rel); err != nil {
			return err
		}
	}
	// The stream ends when the caller goes or the sandbox ends: closing
	// the inotify file ends its Read.
	stop := context.AfterFunc(ctx, func() { w.ino.Close() })
	defer stop()
	quit := make(chan struct{})
	defer close(quit)
	go func() {
		select {
		case <-f.Done:
			w.ino.Close()
		case <-quit:
		}
	}()
	opened()
	return w.run(ctx, f.Done, send)
}

// add watches the folder rel and answers its wd.
func (w *watcher) add(rel string) (int, error) {
	if len(w.paths) >= w.max {
		return 0, api.ErrPayloadTooLarge.WithMessage(fmt.Sprintf("more than %d folders to watch: watch a folder further down, or not recursively", w.max))
	}
	fd, err := openBeneath(w.root, rel, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW, 0)
	if err != nil {
		if errors.Is(err, unix.ENOTDIR) {
			return 0, api.Errorf(errdefs.ErrInvalidArgument, "%s is not a folder: a watch is of a folder", join(w.r, rel))
		}
		return 0, classify(w.r, rel, err)
	}
	defer unix.Close(fd)
	// The magic link names the folder already resolved beneath the root.
	var wd int
	err = w.control(func(ino int) error {
		var err error
		wd, err = unix.InotifyAddWatch(ino, fmt.Sprintf("/proc/self/fd/%d", fd), watchMask)
		return err
	})
	if err != nil {
		if errors.Is(err, unix.ENOSPC) {
			return 0, api.Errorf(errdefs.ErrResourceExhausted, "the host has no inotify watch left: watch fewer folders")
		}
		return 0, classify(w.r, rel, err)
	}
	w.paths[int32(wd)] = rel
	return wd, nil
}

// addBelow watches every folder below rel (not following symlinks).
func (w *watcher) addBelow(rel string) error {
	fd, err := openBeneath(w.root, rel, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW, 0)
	if err != nil {
		return nil // gone or swapped meanwhile: nothing to watch
	}
	dir := os.NewFile(uintptr(fd), rel)
	ents, err := dir.ReadDir(-1)
	dir.Close()
	if err != nil {
		return nil
	}
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		sub := joinRel(rel, e.Name())
		if _, err := w.add(sub); err != nil {
			if errdefs.IsNotFound(err) || errdefs.IsInvalidArgument(err) {
				continue // gone, or not a folder any more
			}
			return err
		}
		if err := w.addBelow(sub); err != nil {
			return err
		}
	}
	return nil
}

func joinRel(dir, name string) string {
	if dir == "" {
		return name
	}
	return dir + "/" + name
}

// run reads events until the inotify file is closed or the top folder goes.
func (w *watcher) run(ctx context.Context, done <-chan struct{}, send func(api.FileEvent) error) error {
	buf := make([]byte, 64*(unix.SizeofInotifyEvent+unix.NAME_MAX+1))
	for {
		n, err := w.ino.Read(buf)
		if err != nil {
			if ctx.Err() != nil || closed(done) || errors.Is(err, os.ErrClosed) {
				return nil
			}
			return err
		}
		// A large write is many IN_MODIFY in a row: of the same event
		// read at once, the client gets one.
		var last api.FileEvent
		dedup := func(ev api.FileEvent) error {
			if ev == last && ev.Type == api.FileWrite {
				return nil
			}
			last = ev
			return send(ev)
		}
		for off := 0; off+unix.SizeofInotifyEvent <= n; {
			ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
			name := string(buf[off+unix.SizeofInotifyEvent : off+unix.SizeofInotifyEvent+int(ev.Len)])
			name = strings.TrimRight(name, "\x00")
			off += unix.SizeofInotifyEvent + int(ev.Len)
			end, err := w.handle(ev.Wd, ev.Mask, name, dedup)
			if err != nil || end {
				return err
			}
		}
	}
}

// isUploadTemp says whether name is one Write gives an upload in
// progress: ".NAME.upload-N" or ".upload-N".
func isUploadTemp(name string) bool {
	i := strings.LastIndex(name, ".upload-")
	if !strings.HasPrefix(name, ".") || i < 0 || (i != 0 && i < 2) {
		return false
	}
	seq := name[i+len(".upload-"):]
	if seq == "" {
		return false
	}
	for _, c := range seq {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// forget stops watching the folder rel and those below it: their paths
// are no longer theirs.
func (w *watcher) forget(rel string) {
	for wd, p := range w.paths {
		if wd != int32(w.top) && (p == rel || strings.HasPrefix(p, rel+"/")) {
			_ = w.control(func(ino int) error {
				_, err := unix.InotifyRmWatch(ino, uint32(wd))
				return err
			})
			delete(w.paths, wd)
		}
	}
}

// control runs fn on the inotify fd, which a concurrent Close cannot
// close (and its number be reused) meanwhile. Fd() would do neither, and
// would take the fd out of the poller, so that Close no longer ends a Read.
func (w *watcher) control(fn func(ino int) error) error {
	rc, err := w.ino.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	if err := rc.Control(func(fd uintptr) { ferr = fn(int(fd)) }); err != nil {
		return err
	}
	return ferr
}

func closed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// handle sends one inotify event as the API's, and says whether the
// stream ends (the watched folder is gone or moved).
func (w *watcher) handle(wd int32, mask uint32, name string, send func(api.FileEvent) error) (bool, error) {
	if mask&unix.IN_Q_OVERFLOW != 0 {
		return false, send(api.FileEvent{Type: api.FileOverflow})
	}
	dir, ok := w.paths[wd]
	if !ok {
		return false, nil // a folder no longer watched
	}
	if mask&unix.IN_IGNORED != 0 {
		delete(w.paths, wd)
		return wd == int32(w.top), nil
	}
	if mask&(unix.IN_DELETE_SELF|unix.IN_MOVE_SELF) != 0 {
		if wd != int32(w.top) {
			return false, nil // the parent's event said it
		}
		typ := api.FileRemove
		if mask&unix.IN_MOVE_SELF != 0 {
			typ = api.FileRename
		}
		return true, send(api.FileEvent{Type: typ, Path: join(w.r, dir)})
	}
	if isUploadTemp(name) {
		// An upload's hidden name for the instant before it takes its
		// own (Write): the client sees the file arrive, not the means.
		return false, nil
	}
	rel := joinRel(dir, name)
	var typ string
	switch {
	case mask&(unix.IN_CREATE|unix.IN_MOVED_TO) != 0:
		typ = api.FileCreate
		if w.recursive && mask&unix.IN_ISDIR != 0 {
			// A new folder, and what was made in it before its watch.
			if _, err := w.add(rel); err == nil {
				if err := w.addBelow(rel); err != nil {
					return true, err
				}
			} else if errdefs.IsResourceExhausted(err) || api.IsPayloadTooLarge(err) {
				return true, err
			}
		}
	case mask&unix.IN_MODIFY != 0:
		typ = api.FileWrite
	case mask&unix.IN_DELETE != 0:
		typ = api.FileRemove
	case mask&unix.IN_MOVED_FROM != 0:
		typ = api.FileRename
		if mask&unix.IN_ISDIR != 0 {
			w.forget(rel) // a MOVED_TO in the tree watches it again
		}
	case mask&unix.IN_ATTRIB != 0:
		typ = api.FileChmod
	default:
		return false, nil
	}
	return false, send(api.FileEvent{Type: typ, Path: join(w.r, rel)})
}
