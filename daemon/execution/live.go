package execution

import (
	"slices"
	"sync"

	"github.com/sandboxd/sandboxd/api"
)

// Live is an execution under way, as GET …/executions/{eid} shows it
// before the history has it: its start, and the output so far.
type Live struct {
	head api.Execution // id, session, language, start, code hash, caller
	out  *Capture
}

// View is the execution as it stands: running, with its output so far.
func (l *Live) View() api.Execution {
	e := l.head
	e.Status = api.StatusRunning
	e.Stdout, e.Stderr = l.out.Text()
	return e
}

// Lives are a session's executions under way. The zero value is ready.
type Lives struct {
	mu   sync.Mutex
	live map[string]*Live
}

// Add makes e findable while it runs; once (a second call keeps the
// first's).
func (ls *Lives) Add(e *api.Execution, out *Capture) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if ls.live == nil {
		ls.live = map[string]*Live{}
	}
	if _, ok := ls.live[e.ID]; ok {
		return
	}
	ls.live[e.ID] = &Live{head: *e, out: out}
}

// Drop forgets execution id: it ended.
func (ls *Lives) Drop(id string) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	delete(ls.live, id)
}

// Get is execution id if it runs, else nil.
func (ls *Lives) Get(id string) *Live {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	return ls.live[id]
}

// All are the executions under way, oldest first.
func (ls *Lives) All() []*Live {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	out := make([]*Live, 0, len(ls.live))
	for _, l := range ls.live {
		out = append(out, l)
	}
	slices.SortFunc(out, func(a, b *Live) int { return a.head.StartedAt.Compare(b.head.StartedAt) })
	return out
}
