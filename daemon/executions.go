package daemon

import (
	"context"
	"slices"
	"sync"

	"github.com/containerd/errdefs"

	"github.com/sandboxd/sandboxd/api"
)

// liveExec is an execution under way, as GET …/executions/{eid} shows it
// before the history has it: its start, and the output so far.
type liveExec struct {
	head api.Execution // id, session, language, start, code hash, caller
	out  *capture
}

// view is the execution as it stands: running, with its output so far.
func (l *liveExec) view() api.Execution {
	e := l.head
	e.Status = api.StatusRunning
	e.Stdout, e.Stderr = l.out.text()
	return e
}

// addLive makes e findable while it runs; once (a second call keeps the
// first's).
func (s *session) addLive(e *api.Execution, out *capture) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.live == nil {
		s.live = map[string]*liveExec{}
	}
	if _, ok := s.live[e.ID]; ok {
		return
	}
	s.live[e.ID] = &liveExec{head: *e, out: out}
}

func (s *session) dropLive(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.live, id)
}

// lives are the session's executions under way, oldest first.
func (s *session) lives() []*liveExec {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*liveExec, 0, len(s.live))
	for _, l := range s.live {
		out = append(out, l)
	}
	slices.SortFunc(out, func(a, b *liveExec) int { return a.head.StartedAt.Compare(b.head.StartedAt) })
	return out
}

// Execution is execution eid of a session: running, or as its history
// keeps it (404 once the history let it go).
func (d *Daemon) Execution(ctx context.Context, id, eid string) (*api.Execution, error) {
	s, err := d.lookup(ctx, id)
	if err != nil {
		return nil, err
	}
	sid := s.ID()
	s.mu.Lock()
	l := s.live[eid]
	s.mu.Unlock()
	if l != nil {
		e := l.view()
		return &e, nil
	}
	d.recorder.flush() // an execution that just ended is written
	r, err := d.store.Execution(sid, eid)
	if errdefs.IsNotFound(err) {
		return nil, api.Errorf(errdefs.ErrNotFound, "no execution %s in session %s: it never ran there, or the history (history_limit, history_total_limit) no longer keeps it", api.Quote(eid), sid)
	}
	if err != nil {
		return nil, err
	}
	e := executionView(r)
	return &e, nil
}

// Executions lists a session's executions, newest first: those under way,
// then those its history keeps; at most limit (0: all).
func (d *Daemon) Executions(ctx context.Context, id string, limit int) ([]api.ExecutionSummary, error) {
	s, err := d.lookup(ctx, id)
	if err != nil {
		return nil, err
	}
	id = s.ID() // id may be a name or a prefix
	lives := s.lives()
	d.recorder.flush() // the caller's own latest executions are in the list
	if err := d.recorder.takeFailure(id); err != nil {
		return nil, err
	}
	recs, err := d.store.Executions(id, limit)
	if err != nil {
		return nil, err
	}
	out := make([]api.ExecutionSummary, 0, len(lives)+len(recs))
	seen := map[string]bool{}
	for _, l := range slices.Backward(lives) {
		out = append(out, summaryOf(l.view()))
		seen[l.head.ID] = true
	}
	for i := range recs {
		if !seen[recs[i].ID] { // ended between the two looks
			out = append(out, summaryOf(executionView(&recs[i])))
		}
	}
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// summaryOf is e as the list of executions shows it.
func summaryOf(e api.Execution) api.ExecutionSummary {
	sum := api.ExecutionSummary{
		ID: e.ID, Language: e.Language, CodeSHA256: e.CodeSHA256, CallerUID: e.CallerUID,
		StartedAt: e.StartedAt, DurationMS: e.DurationMS, Status: e.Status, Metrics: e.Metrics,
		StateReset: e.StateReset, Truncated: e.Truncated,
	}
	if e.Status != api.StatusRunning {
		code := e.ExitCode
		sum.ExitCode = &code
	}
	return sum
}

// detachedRuns are executions that outlive their request (wait false):
// the daemon's close waits for them before it lets go of their sessions.
type detachedRuns struct {
	mu     sync.Mutex
	closed bool
	wg     sync.WaitGroup
}

// Go runs f unless the daemon is closing (false).
func (r *detachedRuns) Go(f func()) bool {
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

// close refuses new runs and waits for those under way, until ctx ends.
func (r *detachedRuns) close(ctx context.Context) {
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

// wait waits for every run to end.
func (r *detachedRuns) wait() { r.wg.Wait() }
