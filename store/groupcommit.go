package store

import (
	"sync"
	"sync/atomic"

	bolt "go.etcd.io/bbolt"
)

// groupCommit makes concurrent writes one transaction, one disk sync: a
// write that finds none under way commits at once, alone; writes that
// arrive while it commits wait and go together in the next. A lone write
// waits for nothing (bbolt's Batch waits up to its MaxBatchDelay for
// company), and a burst of creates pays a few syncs, not one each.
type groupCommit struct {
	mu      sync.Mutex
	pending []*groupWrite
	// leading says a writer is committing; the next batch's first waits
	// for its turn (lead) while the rest wait for their result (done).
	leading bool
	// commits counts the transactions made.
	commits atomic.Int64
}

type groupWrite struct {
	fn   func(*bolt.Tx) error
	done chan error
	lead chan struct{}
}

// updater runs read-write transactions: a *bolt.DB, or the Store's,
// which folds the session log first.
type updater interface {
	Update(fn func(*bolt.Tx) error) error
}

// update runs fn in a read-write transaction, durable when it returns
// nil, possibly together with other writers' functions.
func (g *groupCommit) update(db updater, fn func(*bolt.Tx) error) error {
	w := &groupWrite{fn: fn, done: make(chan error, 1), lead: make(chan struct{}, 1)}
	g.mu.Lock()
	g.pending = append(g.pending, w)
	if g.leading {
		g.mu.Unlock()
		select {
		case err := <-w.done:
			return err
		case <-w.lead:
		}
		g.mu.Lock()
	}
	g.leading = true
	batch := g.pending
	g.pending = nil
	g.mu.Unlock()

	g.commitBatch(db, batch)

	g.mu.Lock()
	if len(g.pending) > 0 {
		g.pending[0].lead <- struct{}{} // the next batch commits now
	} else {
		g.leading = false
	}
	g.mu.Unlock()
	return <-w.done
}

// commitBatch commits every write of batch in one transaction; a write
// whose function fails gets its error, and the others commit again
// without it.
func (g *groupCommit) commitBatch(db updater, batch []*groupWrite) {
	for len(batch) > 0 {
		g.commits.Add(1)
		failed := -1
		err := db.Update(func(tx *bolt.Tx) error {
			for i, w := range batch {
				if err := w.fn(tx); err != nil {
					failed = i
					return err
				}
			}
			return nil
		})
		if failed < 0 {
			for _, w := range batch {
				w.done <- err // nil, or the commit's own error for all
			}
			return
		}
		batch[failed].done <- err
		batch = append(batch[:failed:failed], batch[failed+1:]...)
	}
}
