package execution

import (
	"crypto/sha256"
	"encoding/hex"
	"log/slog"
	"slices"
	"time"

	"github.com/containerd/errdefs"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/store"
)

// Book is the daemon's account of executions: those under way (each
// session's Lives), the history they go to once ended (through the
// Recorder), the answer's bounds, the memory big answers leave behind,
// and the runs detached from their requests. It knows a session only
// through Session: running code in a sandbox is the daemon's.
type Book struct {
	opts Options
	hist History
	rec  *Recorder
	// memory returns the memory of big answers to the system.
	memory MemoryReturn
	// Runs are the executions started with wait false.
	Runs Detached
	// Slots bound the executions running at once, host-wide.
	Slots Slots
}

// Options are a Book's limits and what it takes from the daemon.
type Options struct {
	// MaxOutput bounds each stream of an execution's output
	// (max_output_bytes), MaxAnswer its whole answer (max_answer_bytes),
	// RecordBytes what the history keeps of one (history_record_bytes).
	MaxOutput, MaxAnswer, RecordBytes int64
	// Grace is how long an interrupted execution has before its kill
	// (interrupt_grace_s).
	Grace time.Duration
	// MaxConcurrent bounds the executions running at once, host-wide
	// (max_concurrent_execs).
	MaxConcurrent int
	// NewID names an execution; Now is the daemon's clock.
	NewID func() string
	Now   func() time.Time
	// Kept says whether the daemon still keeps s: the execution of a
	// session deleted while it ran goes to no history.
	Kept func(s Session) bool
	// OnWriteError counts failed history writes (a metric); Counted
	// counts an ended execution, with how long it took (0: not timed,
	// its sandbox was lost).
	OnWriteError func()
	Counted      func(e *api.Execution, took time.Duration)
	Log          *slog.Logger
}

// History is where executions are kept once ended: the store.
type History interface {
	HistoryWriter
	Execution(sid, eid string) (*store.Execution, error)
	Executions(sid string, limit int) ([]store.Execution, error)
}

// Session is what the book needs of a session.
type Session interface {
	ID() string
	// Lives are its executions under way.
	Lives() *Lives
	// Update changes its record under its lock.
	Update(func(*store.Record))
}

// NewBook starts the recorder of h; Close stops it.
func NewBook(h History, o Options) *Book {
	return &Book{opts: o, hist: h, rec: NewRecorder(h, o.Log, o.OnWriteError), Slots: NewSlots(o.MaxConcurrent)}
}

// Close writes what is queued for the history and stops the recorder.
func (b *Book) Close() { b.rec.Close() }

// Start is a new execution of req in session sid by caller uid, and the
// capture of its output (forwarded to onEvent if not nil).
func (b *Book) Start(sid string, uid uint32, req *api.ExecRequest, onEvent func(api.Event)) (*api.Execution, *Capture) {
	sum := sha256.Sum256([]byte(req.Code))
	e := &api.Execution{ID: b.opts.NewID(), SessionID: sid, Language: req.Language, StartedAt: b.opts.Now(),
		CodeSHA256: hex.EncodeToString(sum[:]), CallerUID: &uid}
	return e, NewCapture(b.opts.MaxOutput, b.opts.MaxAnswer, onEvent)
}

// Run runs execution e of s by run, an execution the session's history
// keeps: GET …/executions/{eid} finds it while it runs (live), then in
// the history.
func (b *Book) Run(s Session, e *api.Execution, out *Capture, run func() *api.Execution) *api.Execution {
	s.Lives().Add(e, out) // StartExec's is live already
	e = run()
	var item *store.Executed
	s.Update(func(r *store.Record) {
		r.ExecCount++
		r.LastUsedAt = b.opts.Now()
		item = &store.Executed{SessionID: r.ID, ExecCount: r.ExecCount, LastUsedAt: r.LastUsedAt, Execution: Record(e, b.opts.RecordBytes)}
	})
	if b.opts.Kept(s) {
		b.rec.Add(item)
	}
	// Queued before it leaves the live ones: a reader that misses it
	// there flushes the recorder and finds it in the store.
	s.Lives().Drop(e.ID)
	return e
}

// Relayed notes that e's answer went out: a big one has its memory
// returned to the system a little later.
func (b *Book) Relayed(e *api.Execution) { b.memory.Relayed(Size(e)) }

// Execution is execution eid of s: running, or as its history keeps it
// (404 once the history let it go).
func (b *Book) Execution(s Session, eid string) (*api.Execution, error) {
	sid := s.ID()
	if l := s.Lives().Get(eid); l != nil {
		e := l.View()
		return &e, nil
	}
	b.rec.Flush() // an execution that just ended is written
	r, err := b.hist.Execution(sid, eid)
	if errdefs.IsNotFound(err) {
		return nil, api.Errorf(errdefs.ErrNotFound, "no execution %s in session %s: it never ran there, or the history (history_limit, history_total_limit) no longer keeps it", api.Quote(eid), sid)
	}
	if err != nil {
		return nil, err
	}
	e := View(r)
	return &e, nil
}

// Executions lists s's executions, newest first: those under way, then
// those its history keeps; at most limit (0: all).
func (b *Book) Executions(s Session, limit int) ([]api.ExecutionSummary, error) {
	id := s.ID()
	lives := s.Lives().All()
	b.rec.Flush() // the caller's own latest executions are in the list
	if err := b.rec.TakeFailure(id); err != nil {
		return nil, err
	}
	recs, err := b.hist.Executions(id, limit)
	if err != nil {
		return nil, err
	}
	out := make([]api.ExecutionSummary, 0, len(lives)+len(recs))
	seen := map[string]bool{}
	for _, l := range slices.Backward(lives) {
		out = append(out, summaryOf(l.View()))
		seen[l.head.ID] = true
	}
	for i := range recs {
		if !seen[recs[i].ID] { // ended between the two looks
			out = append(out, summaryOf(View(&recs[i])))
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
