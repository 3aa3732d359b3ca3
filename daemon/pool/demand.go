package pool

import (
	"runtime"
	"sync"
	"time"
)

// DemandWindow is how close together claims count as one burst;
// DemandMemory how long a pool keeps the depth a burst asked for.
const (
	DemandWindow = 10 * time.Second
	DemandMemory = 10 * time.Minute
)

// demand is a pool's recent demand: the most claims seen within
// DemandWindow over the last DemandMemory, so that a burst seen
// once finds the pool that deep the next time.
type demand struct {
	mu sync.Mutex
	// recent are the claims within the window, oldest first, at most
	// cap of them (more would not raise the depth).
	recent []time.Time
	cap    int
	peak   int
	peakAt time.Time
}

// note counts a claim at t and returns the peak.
func (d *demand) note(t time.Time, ceiling int) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.cap = ceiling
	d.dropOld(t)
	d.recent = append(d.recent, t)
	if over := len(d.recent) - d.cap; over > 0 {
		d.recent = d.recent[over:]
	}
	d.raise(t)
	return d.peak
}

// peakAt is the peak at t: the burst remembered, or once it is forgotten
// the claims of the window now.
func (d *demand) peakNow(t time.Time) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.dropOld(t)
	d.raise(t)
	return d.peak
}

func (d *demand) dropOld(t time.Time) {
	i := 0
	for i < len(d.recent) && t.Sub(d.recent[i]) > DemandWindow {
		i++
	}
	d.recent = d.recent[i:]
}

// raise takes the window's count as the peak if it is higher, or if the
// peak is older than the memory.
func (d *demand) raise(t time.Time) {
	if n := len(d.recent); n >= d.peak || t.Sub(d.peakAt) > DemandMemory {
		d.peak, d.peakAt = n, t
	}
}

// refillSlots is how many pooled sandboxes start at once, host-wide: one
// a core (a start is mostly CPU: the runtime's init and the interpreter),
// at most 8.
func refillSlots() int { return min(max(1, runtime.NumCPU()), 8) }
