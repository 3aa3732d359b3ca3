package execution

import (
	"runtime/debug"
	"sync"
	"time"
)

// An answer of megabytes (figures, a long output) passes through the
// daemon's heap several times: the agent's line, the decoded execution,
// the JSON sent on. The Go runtime keeps that memory until its next
// collection, which an idle daemon does only every two minutes, and hands
// it back to the system only after that: a daemon that relayed three
// answers of 4 MiB sat 20 MB or more above its baseline with no session
// left. After a big answer the daemon collects and returns the memory
// itself, a little later (the answer is still being sent) and at most
// once in a while (a collection costs a few milliseconds of CPU).
const (
	// bigAnswer is an answer whose relay is worth a collection.
	bigAnswer = 1 << 20
	// returnDelay is how long after a big answer the memory is returned;
	// returnEvery is the least time between two returns.
	returnDelay = 2 * time.Second
	returnEvery = 10 * time.Second
)

// MemoryReturn schedules the return of memory after big answers.
type MemoryReturn struct {
	mu      sync.Mutex
	pending bool
	// again is set by a big answer relayed while a return was pending:
	// its memory may still be in use when that return runs, so another
	// follows.
	again bool
	last  time.Time
	// free returns memory to the system; delay and every stand in for
	// returnDelay and returnEvery. Tests set them; zero is the default.
	free         func()
	delay, every time.Duration
}

// relayed notes an answer of n bytes went out.
func (m *MemoryReturn) Relayed(n int64) {
	if n < bigAnswer {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.pending {
		m.again = true
		return
	}
	m.schedule()
}

// schedule has memory returned after the delay, no sooner than every
// after the last return. The caller holds mu.
func (m *MemoryReturn) schedule() {
	m.pending = true
	delay, every, free := returnDelay, returnEvery, debug.FreeOSMemory
	if m.free != nil {
		delay, every, free = m.delay, m.every, m.free
	}
	time.AfterFunc(max(delay, time.Until(m.last.Add(every))), func() {
		free()
		m.mu.Lock()
		defer m.mu.Unlock()
		m.pending, m.last = false, time.Now()
		if m.again {
			m.again = false
			m.schedule()
		}
	})
}
