package daemon

import (
	"sync"
	"testing"
	"time"
)

// TestPoolDepthFollowsDemand: a burst of creates raises the pool's depth
// to the burst's size, up to pool_max_size; once the burst is forgotten,
// the pool lets the surplus go, back to pool_size.
func TestPoolDepthFollowsDemand(t *testing.T) {
	defer func(m time.Duration) { poolDemandMemory = m }(poolDemandMemory)
	poolDemandMemory = time.Hour
	e := newEnv(t, func(c *Config) { c.PoolSize, c.PoolMaxSize, c.MaxSessions = 2, 6, 50 })
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

	// Forgotten: the window holds no claims and the memory is over.
	poolDemandMemory = 0
	p := d.tmpl.poolOf(d.tmpl.byName[DefaultTemplate])
	deadline := time.Now().Add(poolDemandWindow + 5*time.Second)
	for p.trim(); p.ready() != 2; p.trim() {
		if time.Now().After(deadline) {
			t.Fatalf("the pool kept %d after the burst was forgotten", p.ready())
		}
		time.Sleep(50 * time.Millisecond)
	}
	if n := len(e.h.ids()); n != 15+2 {
		t.Fatalf("%d sandboxes run, want 17", n)
	}
}

// TestPoolClaimWaitsForRefill: a create that finds the pool empty while a
// refill is under way takes that sandbox, not a cold start of its own.
func TestPoolClaimWaitsForRefill(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.PoolSize = 1 })
	d := e.start()
	waitPool(t, d, 1)
	e.h.mu.Lock()
	e.h.startDelay = 200 * time.Millisecond
	e.h.mu.Unlock()
	mustCreate(t, d, root) // from the pool; its refill starts
	p := d.tmpl.poolOf(d.tmpl.byName[DefaultTemplate])
	for {
		p.mu.Lock()
		filling := p.filling
		p.mu.Unlock()
		if filling == 1 {
			break
		}
		time.Sleep(time.Millisecond)
	}
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
	e := newEnv(t, func(c *Config) { c.PoolSize = 1 })
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
