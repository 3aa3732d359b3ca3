package daemon

import (
	"sync"
	"testing"
	"time"

	"github.com/sandboxd/sandboxd/daemon/config"
	"github.com/sandboxd/sandboxd/internal/testutil"
)

// TestPoolDepthFollowsDemand: a burst of creates raises the pool's depth
// to the burst's size, up to pool_max_size; once the burst is forgotten,
// the pool lets the surplus go, back to pool_size. The test moves the
// daemon's clock past the window and the memory rather than wait.
func TestPoolDepthFollowsDemand(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *config.Config) { c.PoolSize, c.PoolMaxSize, c.MaxSessions = 2, 6, 50 })
	d := e.start()
	waitPool(t, d, 2)
	for range 5 {
		mustCreate(t, d, root)
	}
	waitPool(t, d, 5)
	if info, _ := d.Info(root); info.Pool.Size != 2 || info.Pool.Target != 5 {
		t.Fatalf("after a burst of 5: %+v", info.Pool)
	}
	for range 10 {
		mustCreate(t, d, root)
	}
	waitPool(t, d, 6) // the ceiling
	time.Sleep(50 * time.Millisecond)
	if info, _ := d.Info(root); info.Pool.Target != 6 || info.Pool.Idle != 6 {
		t.Fatalf("past the ceiling: %+v", info.Pool)
	}

	// Past the window the burst is remembered: the pool stays as deep.
	p := d.tmpl.poolOf(d.tmpl.byName[DefaultTemplate])
	e.clock.advance(poolDemandWindow + time.Second)
	if p.trim(); p.ready() != 6 {
		t.Fatalf("the pool kept %d once the burst left the window, want 6 (remembered)", p.ready())
	}
	// Forgotten: the window holds no claims and the memory is over.
	e.clock.advance(poolDemandMemory)
	testutil.WaitFor(t, 10*time.Second, func() bool { p.trim(); return p.ready() == 2 },
		"the pool never went back to 2 after the burst was forgotten")
	if n := len(e.h.ids()); n != 15+2 {
		t.Fatalf("%d sandboxes run, want 17", n)
	}
}

// TestPoolClaimWaitsForRefill: a create that finds the pool empty while a
// refill is under way takes that sandbox, not a cold start of its own.
func TestPoolClaimWaitsForRefill(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *config.Config) { c.PoolSize = 1 })
	d := e.start()
	waitPool(t, d, 1)
	e.h.mu.Lock()
	e.h.startDelay = 200 * time.Millisecond
	e.h.mu.Unlock()
	mustCreate(t, d, root) // from the pool; its refill starts
	p := d.tmpl.poolOf(d.tmpl.byName[DefaultTemplate])
	testutil.WaitFor(t, 10*time.Second, func() bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		return p.filling == 1
	}, "the pool's refill never started")
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			mustCreate(t, d, root)
		}()
	}
	wg.Wait()
	hits := counterValue(t, d.metrics.poolHits.WithLabelValues(DefaultTemplate))
	misses := counterValue(t, d.metrics.poolMisses.WithLabelValues(DefaultTemplate))
	// The first of the two waits for the refill under way; the other, no
	// refill left to wait for, starts cold.
	if hits != 2 || misses != 1 {
		t.Fatalf("pool hits %v, misses %v: want 2 and 1", hits, misses)
	}
}

// TestPoolClaimSkipsTheGone: a pooled sandbox whose process is gone, its
// exit not yet seen, is not handed out; the create gets another.
func TestPoolClaimSkipsTheGone(t *testing.T) {
	e := newEnv(t, func(c *config.Config) { c.PoolSize = 1 })
	d := e.start()
	waitPool(t, d, 1)
	gone := e.h.ids()[0]
	b := e.h.box(gone)
	b.mu.Lock()
	b.gone = true
	b.mu.Unlock()
	s := mustCreate(t, d, root)
	if s.ID == gone {
		t.Fatal("claimed a sandbox whose process is gone")
	}
	if n := counterValue(t, d.metrics.poolDeaths.WithLabelValues(DefaultTemplate)); n != 1 {
		t.Fatalf("pool deaths %v, want 1", n)
	}
}
