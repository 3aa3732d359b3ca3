package daemon

import "time"

// clock is the time the daemon's own timers go by: the reaper's (idle
// timeouts, the maximum lifetime) and the pools' demand (the window a
// burst is counted in, how long it is remembered). The daemon runs on
// realClock; a test moves a fake one on instead of waiting for it
// (fakeClock in clock_test.go). Records keep the real time (now()).
type clock interface {
	Now() time.Time
	// NewTicker ticks every d; stop ends it.
	NewTicker(d time.Duration) (c <-chan time.Time, stop func())
}

// realClock is the host's time.
type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

func (realClock) NewTicker(d time.Duration) (<-chan time.Time, func()) {
	t := time.NewTicker(d)
	return t.C, t.Stop
}
