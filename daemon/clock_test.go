package daemon

import (
	"sync"
	"time"
)

// fakeClock is the host's time moved on by what a test added (advance):
// a session used a moment ago is, to the reaper, an hour idle once the
// test advances an hour. Its tickers tick in real time as the real ones
// do, and at once on every advance, so that what the advance made due
// happens without waiting for the next tick.
type fakeClock struct {
	mu     sync.Mutex
	offset time.Duration
	ticks  map[chan time.Time]struct{}
}

var _ clock = (*fakeClock)(nil)

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.offset)
}

func (c *fakeClock) NewTicker(d time.Duration) (<-chan time.Time, func()) {
	// One tick at most waits: the reader reads the time after it, so a
	// tick that finds one waiting needs no other.
	ch := make(chan time.Time, 1)
	c.mu.Lock()
	if c.ticks == nil {
		c.ticks = map[chan time.Time]struct{}{}
	}
	c.ticks[ch] = struct{}{}
	c.mu.Unlock()
	real := time.NewTicker(d)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-done:
				return
			case <-real.C:
				c.tick(ch)
			}
		}
	}()
	var once sync.Once
	return ch, func() {
		once.Do(func() {
			real.Stop()
			close(done)
			c.mu.Lock()
			delete(c.ticks, ch)
			c.mu.Unlock()
		})
	}
}

// advance moves the clock on by d and ticks every ticker.
func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	c.offset += d
	chs := make([]chan time.Time, 0, len(c.ticks))
	for ch := range c.ticks {
		chs = append(chs, ch)
	}
	c.mu.Unlock()
	for _, ch := range chs {
		c.tick(ch)
	}
}

func (c *fakeClock) tick(ch chan time.Time) {
	select {
	case ch <- c.Now():
	default:
	}
}
