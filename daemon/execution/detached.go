package execution

import (
	"context"
	"sync"
)

// Detached are executions that outlive their request (wait false): the
// daemon's close waits for them before it lets go of their sessions. The
// zero value is ready.
type Detached struct {
	mu     sync.Mutex
	closed bool
	wg     sync.WaitGroup
}

// Go runs f unless the daemon is closing (false).
func (r *Detached) Go(f func()) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return false
	}
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		f()
	}()
	return true
}

// Close refuses new runs and waits for those under way, until ctx ends.
func (r *Detached) Close(ctx context.Context) {
	r.mu.Lock()
	r.closed = true
	r.mu.Unlock()
	done := make(chan struct{})
	go func() {
		r.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
	}
}

// Wait waits for every run to end.
func (r *Detached) Wait() { r.wg.Wait() }
