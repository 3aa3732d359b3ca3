package execution

import (
	"log/slog"
	"sync"
	"time"

	"github.com/containerd/errdefs"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/store"
)

// recorder writes finished executions to the store in the background, so
// an execution's answer never waits for a disk sync: under load, the writes
// that queue up meanwhile go out in one transaction. A write waits up to
// coalesce for more to join it (not when someone waits for it), so that a
// busy session does not pay a disk sync per execution. An execution not yet
// written when the host crashes is lost from the history; nothing else is.
// A write that fails is not only logged: the next read of the session's
// history answers the error, once (failures), so a client never takes a
// history with holes for a whole one.
type Recorder struct {
	st   HistoryWriter
	log  *slog.Logger
	jobs chan recordJob
	done chan struct{}
	// onError counts failed writes (a metric).
	onError func()

	mu sync.Mutex
	// failures are the failed writes not yet told, by session.
	failures map[string]*writeFailure
}

// HistoryWriter is where the recorder writes: the store.
type HistoryWriter interface {
	AddExecutions(items []store.Executed) error
}

// writeFailure is what a session's history lost.
type writeFailure struct {
	lost int
	err  error
}

// maxFailures bounds the sessions whose failures are kept to be told.
const maxFailures = 4096

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

func NewRecorder(st HistoryWriter, log *slog.Logger, onError func()) *Recorder {
	r := &Recorder{st: st, log: log, jobs: make(chan recordJob, 1024), done: make(chan struct{}),
		onError: onError, failures: map[string]*writeFailure{}}
	go r.run()
	return r
}

// failed records that items could not be written.
func (r *Recorder) failed(items []store.Executed, err error) {
	r.onError()
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, it := range items {
		f := r.failures[it.SessionID]
		if f == nil {
			if len(r.failures) >= maxFailures {
				continue
			}
			f = &writeFailure{}
			r.failures[it.SessionID] = f
		}
		f.lost++
		f.err = err
	}
}

// takeFailure returns, once, why executions of session id were not
// recorded since the last time it was asked.
func (r *Recorder) TakeFailure(id string) error {
	r.mu.Lock()
	f := r.failures[id]
	delete(r.failures, id)
	r.mu.Unlock()
	if f == nil {
		return nil
	}
	return api.Errorf(errdefs.ErrInternal, "%d execution(s) of session %s could not be recorded in its history (%v): the list lacks them; later ones are recorded again when the disk allows", f.lost, id, f.err)
}

// add queues an execution; it blocks only when the queue is full, which
// slows executions to the disk's pace rather than holding unbounded memory.
func (r *Recorder) Add(it *store.Executed) { r.jobs <- recordJob{item: it} }

// flush waits until every execution queued before it is written.
func (r *Recorder) Flush() {
	f := make(chan struct{})
	r.jobs <- recordJob{flush: f}
	<-f
}

// close writes what is queued and stops.
func (r *Recorder) Close() {
	close(r.jobs)
	<-r.done
}

func (r *Recorder) run() {
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
				r.failed(items, err)
			}
		}
		for _, j := range batch {
			if j.flush != nil {
				close(j.flush)
			}
		}
	}
}
