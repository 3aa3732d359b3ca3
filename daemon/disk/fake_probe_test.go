package disk

import (
	"path/filepath"
	"sync"
)

// fakeProbe is a made-up host disk: free space is what the test sets,
// each session image takes what the test says it holds, and an image
// exists when the test says so.
type fakeProbe struct {
	mu     sync.Mutex
	freeB  int64
	alloc  map[string]int64 // by session id
	images map[string]bool  // session ids whose image exists
}

func newFakeProbe(free int64) *fakeProbe {
	return &fakeProbe{freeB: free, alloc: map[string]int64{}, images: map[string]bool{}}
}

func (f *fakeProbe) setFree(n int64) { f.mu.Lock(); f.freeB = n; f.mu.Unlock() }

func (f *fakeProbe) Free(string) (int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.freeB, nil
}

func (f *fakeProbe) Allocated(dir string) int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.alloc[filepath.Base(dir)]
}

func (f *fakeProbe) Exists(dir string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.images[filepath.Base(dir)]
}

func (f *fakeProbe) Writable(string) error { return nil }

var _ Probe = (*fakeProbe)(nil)
