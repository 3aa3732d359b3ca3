package execution

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/sandboxd/sandboxd/internal/testutil"
)

// TestMemoryReturn: small answers return nothing; a big one returns
// memory later; one relayed while a return waits gets one more after it
// (its memory may have been in use at the first: in the VM a daemon kept
// 17 MiB of a burst's last answer); returns are at least every apart.
func TestMemoryReturn(t *testing.T) {
	t.Parallel()
	var n atomic.Int32
	m := &MemoryReturn{free: func() { n.Add(1) }, delay: 20 * time.Millisecond, every: 200 * time.Millisecond}
	m.Relayed(bigAnswer - 1)
	time.Sleep(50 * time.Millisecond)
	if n.Load() != 0 {
		t.Fatal("a small answer returned memory")
	}
	m.Relayed(bigAnswer)
	m.Relayed(4 * bigAnswer)
	if n.Load() != 0 {
		t.Fatal("memory was returned at once, while the answer is still sent")
	}
	waitUntil(t, func() bool { return n.Load() == 1 })
	start := time.Now()
	waitUntil(t, func() bool { return n.Load() == 2 })
	if took := time.Since(start); took < 150*time.Millisecond {
		t.Errorf("the burst's second return came %v after the first", took)
	}
	time.Sleep(250 * time.Millisecond)
	if n.Load() != 2 {
		t.Errorf("%d returns for a burst of two", n.Load())
	}
	m.Relayed(bigAnswer)
	waitUntil(t, func() bool { return n.Load() == 3 })
	time.Sleep(250 * time.Millisecond)
	if n.Load() != 3 {
		t.Errorf("%d returns for three big answers in two bursts", n.Load())
	}
}

func waitUntil(t *testing.T, ok func() bool) {
	t.Helper()
	testutil.WaitFor(t, 10*time.Second, ok, "the memory was not returned")
}
