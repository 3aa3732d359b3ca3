package daemon

import (
	"log/slog"
	"time"

	"github.com/sandboxd/sandboxd/store"
)

// recorder writes finished executions to the store in the background, so
// an execution's answer never waits for a disk sync: under load, the writes
// that queue up meanwhile go out in one transaction. A write waits up to
// coalesce for more to join it (not when someone waits for it), so that a
// busy session does not pay a disk sync per execution. An execution not yet
// written when the host crashes is lost from the history; nothing else is.
type recorder struct {
	st   *store.Store
	log  *slog.Logger
	jobs chan recordJob
	done chan struct{}
}

type recordJob struct {
	item  *store.Executed
	flush chan struct{} // closed once everything before it is written
}

// maxBatch bounds one transaction; coalesce is the longest a write waits
// for others to join it.
const (
	maxBatch = 256
	coalesce = 10 * time.Millisecond
)

func newRecorder(st *store.Store, log *slog.Logger) *recorder {
	r := &recorder{st: st, log: log, jobs: make(chan recordJob, 1024), done: make(chan struct{})}
	go r.run()
	return r
}

// add queues an execution; it blocks only when the queue is full, which
// slows executions to the disk's pace rather than holding unbounded memory.
func (r *recorder) add(it *store.Executed) { r.jobs <- recordJob{item: it} }

// flush waits until every execution queued before it is written.
func (r *recorder) flush() {
	f := make(chan struct{})
	r.jobs <- recordJob{flush: f}
	<-f
}

// close writes what is queued and stops.
func (r *recorder) close() {
	close(r.jobs)
	<-r.done
}

func (r *recorder) run() {
	defer close(r.done)
	timer := time.NewTimer(coalesce)
	timer.Stop()
	for job := range r.jobs {
		batch := []recordJob{job}
		timer.Reset(coalesce)
	more:
		for len(batch) < maxBatch && batch[len(batch)-1].flush == nil {
			select {
			case j, ok := <-r.jobs:
				if !ok {
					break more
				}
				batch = append(batch, j)
			case <-timer.C:
				break more
			}
		}
		timer.Stop()
		var items []store.Executed
		for _, j := range batch {
			if j.item != nil {
				items = append(items, *j.item)
			}
		}
		if len(items) > 0 {
			if err := r.st.AddExecutions(items); err != nil {
				r.log.Error("record executions", "count", len(items), "err", err)
			}
		}
		for _, j := range batch {
			if j.flush != nil {
				close(j.flush)
			}
		}
	}
}
