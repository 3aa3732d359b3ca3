package daemon

import (
	"testing"

	"github.com/sandboxd/sandboxd/daemon/config"
	"github.com/sandboxd/sandboxd/daemon/pool"
	"github.com/sandboxd/sandboxd/internal/testutil"
)

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
	if n, _ := testutil.Scrape(t, d.metrics.Registry(), "sandboxd_pool_sandbox_deaths_total", "template", pool.DefaultTemplate); n != 1 {
		t.Fatalf("pool deaths %v, want 1", n)
	}
}
