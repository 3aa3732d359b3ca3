package daemon

import (
	"sync/atomic"
	"testing"
	"time"
)

// TestMemoryReturn: small answers return nothing; big ones close together
// return memory once, later; and returns are at least every apart.
func TestMemoryReturn(t *testing.T) {
	var n atomic.Int32
	m := &memoryReturn{free: func() { n.Add(1) }, delay: 20 * time.Millisecond, every: 200 * time.Millisecond}
	m.relayed(bigAnswer - 1)
	time.Sleep(50 * time.Millisecond)
	if n.Load() != 0 {
		t.Fatal("a small answer returned memory")
	}
	m.relayed(bigAnswer)
	m.relayed(4 * bigAnswer)
	if n.Load() != 0 {
		t.Fatal("memory was returned at once, while the answer is still sent")
	}
	waitUntil(t, func() bool { return n.Load() == 1 })
	start := time.Now()
	m.relayed(bigAnswer)
	waitUntil(t, func() bool { return n.Load() == 2 })
	if took := time.Since(start); took < 150*time.Millisecond {
		t.Errorf("the second return came %v after the first", took)
	}
	time.Sleep(50 * time.Millisecond)
	if n.Load() != 2 {
		t.Errorf("%d returns for three big answers in two bursts", n.Load())
	}
}

func waitUntil(t *testing.T, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !ok(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("timed out")
		}
	}
}
