package daemon

import (
	"errors"
	"os"
	"path/filepath"
	"sync"

	"github.com/sandboxd/sandboxd/daemon/disk"
	"github.com/sandboxd/sandboxd/isolation/volume"
)

// fakeDisk is a made-up host disk for the unit tests: free space is what
// the test sets, each session image takes what the test says it holds,
// and a test may turn a session's filesystem read-only.
type fakeDisk struct {
	mu       sync.Mutex
	freeB    int64
	alloc    map[string]int64 // by session id
	readOnly map[string]bool  // by session id
	images   map[string]bool  // session ids whose image "exists" (Loop tests)
	// real makes exists look at the real folder (the daemon's Plain ones).
	real bool
}

func newFakeDisk(free int64) *fakeDisk {
	return &fakeDisk{freeB: free, alloc: map[string]int64{}, readOnly: map[string]bool{}, images: map[string]bool{}, real: true}
}

func (f *fakeDisk) setFree(n int64) { f.mu.Lock(); f.freeB = n; f.mu.Unlock() }

func (f *fakeDisk) setReadOnly(id string) { f.mu.Lock(); f.readOnly[id] = true; f.mu.Unlock() }

func (f *fakeDisk) Free(string) (int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.freeB, nil
}

func (f *fakeDisk) Allocated(dir string) int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.alloc[filepath.Base(dir)]
}

func (f *fakeDisk) Exists(dir string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.real {
		_, err := os.Stat(volume.Root(dir))
		return err == nil
	}
	return f.images[filepath.Base(dir)]
}

func (f *fakeDisk) Writable(dir string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.readOnly[filepath.Base(dir)] {
		return errors.New("mounted read-only")
	}
	return nil
}

var _ disk.Probe = (*fakeDisk)(nil)
