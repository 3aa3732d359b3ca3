package pool

import (
	"sync"
	"testing"
	"time"

	"github.com/sandboxd/sandboxd/daemon/config"
	"github.com/sandboxd/sandboxd/internal/testutil"
)

// TestPoolDepthFollowsDemand: a burst of claims raises the pool's depth
// to the burst's size, up to pool_max_size; once the burst is forgotten,
// the pool lets the surplus go, back to pool_size. The test moves the
// pools' clock past the window and the memory rather than wait.
func TestPoolDepthFollowsDemand(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t, func(c *config.Config) { c.PoolSize, c.PoolMaxSize = 2, 6 })
	e.waitReady(t, 2)
	claimed := 0
	for range 5 {
		if e.claim(t) != nil {
			claimed++
		}
	}
	e.waitReady(t, 5)
	p := e.pool()
	if n := p.size(); n != 5 {
		t.Fatalf("after a burst of 5 the pool keeps %d", n)
	}
	for range 10 {
		if e.claim(t) != nil {
			claimed++
		}
	}
	e.waitReady(t, 6) // the ceiling
	time.Sleep(50 * time.Millisecond)
	if n := p.ready(); n != 6 || p.target.Load() != 6 {
		t.Fatalf("past the ceiling: %d ready, target %d", n, p.target.Load())
	}

	// Past the window the burst is remembered: the pool stays as deep.
	e.clock.advance(DemandWindow + time.Second)
	if p.trim(); p.ready() != 6 {
		t.Fatalf("the pool kept %d once the burst left the window, want 6 (remembered)", p.ready())
	}
	// Forgotten: the window holds no claims and the memory is over.
	e.clock.advance(DemandMemory)
	testutil.WaitFor(t, 10*time.Second, func() bool { p.trim(); return p.ready() == 2 },
		"the pool never went back to 2 after the burst was forgotten")
	// The claimed sandboxes are their sessions' (the fake keeps them),
	// and the pool's 2: nothing else runs.
	if n := e.sbs.running(); n != claimed+2 {
		t.Fatalf("%d sandboxes run, want %d", n, claimed+2)
	}
}

// TestPoolClaimWaitsForRefill: a claim that finds the pool empty while a
// refill is under way takes that sandbox, not a cold start of its own.
func TestPoolClaimWaitsForRefill(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t, func(c *config.Config) { c.PoolSize = 1 })
	e.waitReady(t, 1)
	e.sbs.mu.Lock()
	e.sbs.startDelay = 200 * time.Millisecond
	e.sbs.mu.Unlock()
	if e.claim(t) == nil { // from the pool; its refill starts
		t.Fatal("no sandbox claimed")
	}
	p := e.pool()
	testutil.WaitFor(t, 10*time.Second, func() bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		return p.filling == 1
	}, "the pool's refill never started")
	var wg sync.WaitGroup
	var mu sync.Mutex
	hits := 0
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if e.claim(t) != nil {
				mu.Lock()
				hits++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	// The first of the two waits for the refill under way; the other, no
	// refill left to wait for, gets none (its create starts cold).
	if hits != 1 {
		t.Fatalf("%d of the two claims got a sandbox, want 1", hits)
	}
}

// TestPoolClaimSkipsTheGone: a pooled sandbox whose process is gone, its
// exit not yet seen, is not handed out.
func TestPoolClaimSkipsTheGone(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t, func(c *config.Config) { c.PoolSize = 1 })
	e.waitReady(t, 1)
	gone := e.sbs.ids()[0]
	b := e.sbs.get(gone)
	b.mu.Lock()
	b.gone = true
	b.mu.Unlock()
	if sb := e.claim(t); sb != nil && sb.ID() == gone {
		t.Fatal("claimed a sandbox whose process is gone")
	}
	if n := e.metrics.died(); n != 1 {
		t.Fatalf("pool deaths %v, want 1", n)
	}
	if e.sbs.get(gone) != nil {
		t.Fatal("the gone sandbox was not destroyed")
	}
}

// TestPoolHealthCheck: a pooled sandbox that stops answering is replaced.
func TestPoolHealthCheck(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t, func(c *config.Config) { c.PoolSize = 1 })
	e.waitReady(t, 1)
	sick := e.sbs.ids()[0]
	b := e.sbs.get(sick)
	b.mu.Lock()
	b.unhealthy = true
	b.mu.Unlock()
	e.pool().checkIdle(t.Context())
	e.waitReady(t, 1)
	if e.sbs.get(sick) != nil {
		t.Fatal("the sandbox that failed its health check still runs")
	}
	if sb := e.claim(t); sb == nil || sb.ID() == sick {
		t.Fatalf("claimed %v, not a healthy sandbox", sb)
	}
}

// TestPoolReplacesTheDead: a pooled sandbox that dies while it waits is
// taken out at once, counted, destroyed and replaced.
func TestPoolReplacesTheDead(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t, func(c *config.Config) { c.PoolSize = 2 })
	e.waitReady(t, 2)
	dead := e.sbs.ids()[0]
	e.sbs.get(dead).exit()
	testutil.WaitFor(t, 10*time.Second, func() bool { return e.sbs.get(dead) == nil && e.pool().ready() == 2 },
		"the dead sandbox was not replaced")
	if n := e.metrics.died(); n != 1 {
		t.Fatalf("pool deaths %v, want 1", n)
	}
}

// TestPoolYieldsDisk: a pool kept past its pool_size by demand lets the
// surplus go for a session's disk, and stays at pool_size a while.
func TestPoolYieldsDisk(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t, func(c *config.Config) { c.PoolSize, c.PoolMaxSize = 1, 4 })
	e.waitReady(t, 1)
	for range 4 {
		e.claim(t)
	}
	e.waitReady(t, 4)
	if !e.ts.YieldDisk(t.Context()) {
		t.Fatal("the pools gave nothing back")
	}
	if n := e.pool().ready(); n != 1 {
		t.Fatalf("%d left in the pool, want its pool_size 1", n)
	}
	time.Sleep(50 * time.Millisecond)
	if n := e.pool().ready(); n != 1 {
		t.Fatalf("the pool refilled to %d within spaceWait", n)
	}
}
