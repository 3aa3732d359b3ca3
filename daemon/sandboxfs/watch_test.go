package sandboxfs

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/containerd/errdefs"

	"github.com/sandboxd/sandboxd/api"
)

// watchOf starts a watch of rel and answers its events and its end.
func watchOf(t *testing.T, ctx context.Context, fs *FS, rel string, recursive bool, max int) (<-chan api.FileEvent, <-chan error) {
	t.Helper()
	evs := make(chan api.FileEvent, 100)
	end := make(chan error, 1)
	opened := make(chan struct{})
	go func() {
		end <- fs.watch(ctx, Workspace, rel, recursive, max, func() { close(opened) }, func(e api.FileEvent) error {
			evs <- e
			return nil
		})
	}()
	select {
	case <-opened:
	case err := <-end:
		t.Fatalf("watch: %v", err)
	}
	return evs, end
}

// expect waits for an event of typ at path.
func expect(t *testing.T, evs <-chan api.FileEvent, typ, path string) {
	t.Helper()
	deadline := time.After(5 * time.Second)
	for {
		select {
		case e := <-evs:
			if e.Type == typ && e.Path == path {
				return
			}
		case <-deadline:
			t.Fatalf("no %s of %s", typ, path)
		}
	}
}

func TestWatch(t *testing.T) {
	fs, base := newFS(t)
	ws := filepath.Join(base, "ws")
	done := make(chan struct{})
	fs.Done = done
	before := runtime.NumGoroutine()
	ctx, cancel := context.WithCancel(context.Background())
	evs, end := watchOf(t, ctx, fs, "", true, 10)

	os.WriteFile(filepath.Join(ws, "a"), []byte("x"), 0o644)
	expect(t, evs, api.FileCreate, "/workspace/a")
	expect(t, evs, api.FileWrite, "/workspace/a")
	os.Chmod(filepath.Join(ws, "a"), 0o600)
	expect(t, evs, api.FileChmod, "/workspace/a")
	// A new folder is watched too, and what is made in it.
	os.MkdirAll(filepath.Join(ws, "d/e"), 0o755)
	expect(t, evs, api.FileCreate, "/workspace/d")
	time.Sleep(50 * time.Millisecond)
	os.WriteFile(filepath.Join(ws, "d/e/f"), nil, 0o644)
	expect(t, evs, api.FileCreate, "/workspace/d/e/f")
	os.Rename(filepath.Join(ws, "a"), filepath.Join(ws, "d/b"))
	expect(t, evs, api.FileRename, "/workspace/a")
	expect(t, evs, api.FileCreate, "/workspace/d/b")
	os.Remove(filepath.Join(ws, "d/b"))
	expect(t, evs, api.FileRemove, "/workspace/d/b")

	cancel()
	if err := <-end; err != nil {
		t.Fatalf("end: %v", err)
	}
	// The sandbox's end ends a watch too.
	evs, end = watchOf(t, context.Background(), fs, "d", false, 10)
	close(done)
	select {
	case err := <-end:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the watch outlived the sandbox")
	}
	_ = evs
	// Nothing is left behind.
	for i := 0; runtime.NumGoroutine() > before && i < 100; i++ {
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		t.Fatalf("%d goroutines, %d before", n, before)
	}
}

func TestWatchEnds(t *testing.T) {
	fs, base := newFS(t)
	ws := filepath.Join(base, "ws")
	fs.Done = make(chan struct{})
	os.MkdirAll(filepath.Join(ws, "gone/sub"), 0o755)
	fds := countFDs(t)
	// The watched folder's removal ends the stream.
	evs, end := watchOf(t, context.Background(), fs, "gone", true, 10)
	os.RemoveAll(filepath.Join(ws, "gone"))
	expect(t, evs, api.FileRemove, "/workspace/gone")
	select {
	case err := <-end:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the watch outlived its folder")
	}
	if n := countFDs(t); n > fds {
		t.Fatalf("%d fds open, %d before", n, fds)
	}
}

func TestWatchRefuses(t *testing.T) {
	fs, base := newFS(t)
	ws := filepath.Join(base, "ws")
	noop := func() {}
	send := func(api.FileEvent) error { return nil }
	ctx := context.Background()
	if err := fs.Watch(ctx, Workspace, "", false, noop, send); !errdefs.IsConflict(err) {
		t.Fatalf("not running: %v", err)
	}
	fs.Done = make(chan struct{})
	fds := countFDs(t)
	os.WriteFile(filepath.Join(ws, "f"), nil, 0o644)
	os.Symlink("/", filepath.Join(ws, "out"))
	os.MkdirAll(filepath.Join(ws, "a/b/c/d"), 0o755)
	if err := fs.Watch(ctx, Workspace, "f", false, noop, send); !errdefs.IsInvalidArgument(err) {
		t.Fatalf("a file: %v", err)
	}
	if err := fs.Watch(ctx, Workspace, "out", false, noop, send); !errdefs.IsInvalidArgument(err) {
		t.Fatalf("a symlink out: %v", err)
	}
	if err := fs.Watch(ctx, Workspace, "nope", false, noop, send); !errdefs.IsNotFound(err) {
		t.Fatalf("missing: %v", err)
	}
	if err := fs.watch(ctx, Workspace, "", true, 3, noop, send); !api.IsPayloadTooLarge(err) {
		t.Fatalf("too many folders: %v", err)
	}
	// A refused watch leaves no fd open (the inotify one, the folders').
	if n := countFDs(t); n != fds {
		t.Fatalf("%d fds open after refusals, %d before", n, fds)
	}
	// A session serves a bounded number of watches.
	fl := &Files{Of: func(context.Context, string) (*FS, error) { return fs, nil }}
	var releases []func()
	for range MaxWatchStreams {
		r, err := fl.watchStream(fs.Workspace)
		if err != nil {
			t.Fatal(err)
		}
		releases = append(releases, r)
	}
	if err := fl.WatchFiles(ctx, "s", "/workspace", false, noop, send); !errdefs.IsResourceExhausted(err) {
		t.Fatalf("one watch too many: %v", err)
	}
	for _, r := range releases {
		r()
	}
	if len(fl.streams) != 0 {
		t.Fatalf("streams left: %v", fl.streams)
	}
}

func countFDs(t *testing.T) int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

// TestWatchCoalescesWrites: a write in many pieces is not an event each.
func TestWatchCoalescesWrites(t *testing.T) {
	fs, base := newFS(t)
	fs.Done = make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f, err := os.Create(filepath.Join(base, "ws", "big"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	evs, end := watchOf(t, ctx, fs, "", false, 10)
	for range 200 {
		f.Write([]byte("x"))
	}
	f.Chmod(0o600)
	writes := 0
	for done := false; !done; {
		select {
		case e := <-evs:
			switch e.Type {
			case api.FileWrite:
				writes++
			case api.FileChmod:
				done = true
			}
		case <-time.After(5 * time.Second):
			t.Fatal("no chmod")
		}
	}
	if writes == 0 || writes >= 200 {
		t.Fatalf("%d write events for 200 writes", writes)
	}
	cancel()
	<-end
}

// TestWatchHidesUploads: an upload through the API is seen as its file's
// arrival, not as its hidden name's moves.
func TestWatchHidesUploads(t *testing.T) {
	fs, _ := newFS(t)
	fs.Done = make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	evs, end := watchOf(t, ctx, fs, "", false, 10)
	if _, err := fs.Write(Workspace, "up.txt", strings.NewReader("x"), 10); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(fs.Workspace, "after"), nil, 0o644)
	arrived := false
	for {
		select {
		case e := <-evs:
			if strings.Contains(e.Path, ".upload-") {
				t.Fatalf("the upload's hidden name shows: %+v", e)
			}
			arrived = arrived || e == api.FileEvent{Type: api.FileCreate, Path: "/workspace/up.txt"}
			if e.Path == "/workspace/after" {
				if !arrived {
					t.Fatal("the upload's arrival was not seen")
				}
				cancel()
				<-end
				return
			}
		case <-time.After(5 * time.Second):
			t.Fatal("no event")
		}
	}
}

func TestIsUploadTemp(t *testing.T) {
	for name, want := range map[string]bool{
		".a.txt.upload-12": true, ".upload-3": true, ".a.upload-": false, "a.upload-1": false,
		".a.upload-1x": false, ".upload": false, "upload-1": false,
	} {
		if got := isUploadTemp(name); got != want {
			t.Errorf("%q: %v", name, got)
		}
	}
}
