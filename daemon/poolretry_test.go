package daemon

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/daemon/config"
	"github.com/sandboxd/sandboxd/daemon/disk"
	"github.com/sandboxd/sandboxd/daemon/metrics"
	"github.com/sandboxd/sandboxd/internal/testutil"
)

// countingDisk counts the data dir's free-space reads: one for each new
// disk a refill asks for, that is each refill's attempt.
type countingDisk struct {
	*fakeDisk
	mu    sync.Mutex
	reads int
}

func (c *countingDisk) Free(dir string) (int64, error) {
	c.mu.Lock()
	c.reads++
	c.mu.Unlock()
	return c.fakeDisk.Free(dir)
}

func (c *countingDisk) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.reads
}

// startLogged starts the env's daemon as start does, with its log in log
// and its disk probe probe.
func (e *testEnv) startLogged(log *testutil.Buffer, probe disk.Probe) *Daemon {
	e.t.Helper()
	st, err := openStore(e.cfg)
	if err != nil {
		e.t.Fatal(err)
	}
	d, err := newDaemon(context.Background(), e.cfg, slog.New(slog.NewTextHandler(log, nil)), metrics.New(),
		deps{store: st, rt: fakeRuntime{e.h}, ids: e.ids, inst: instance{id: "test"}, probe: probe,
			net: netDeps{net: e.net}, host: e.host})
	if err != nil {
		st.Close()
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { _ = d.Close(context.Background()) })
	return d
}

// shortRetry makes the pools' back-off 20 ms doubling to 200 ms for the
// test.
func shortRetry(t *testing.T) {
	lo, hi := poolRetryMin, poolRetryMax
	t.Cleanup(func() { poolRetryMin, poolRetryMax = lo, hi })
	poolRetryMin, poolRetryMax = 20*time.Millisecond, 200*time.Millisecond
}

// TestPoolRefillBacksOff: a pool whose refills fail, for want of disk
// space or because sandboxes do not start, tries again after an
// exponential, capped wait, logs that once, says it in health, and
// recovers by itself (issue 30: a pool with no disk space retried at
// once, woken by its own refill's end: 71,426 log lines and 11 s of
// daemon CPU in 10 s).
func TestPoolRefillBacksOff(t *testing.T) {
	// The cases run side by side (each is a second of waiting), under
	// this serial test's shortened retry: no other test runs meanwhile.
	shortRetry(t)
	for _, tc := range []struct {
		name   string
		fail   func(e *testEnv, disk *countingDisk)
		heal   func(e *testEnv, disk *countingDisk)
		status string
		detail string
	}{
		{"no disk space",
			func(e *testEnv, disk *countingDisk) { disk.setFree(100 * mb) },
			func(e *testEnv, disk *countingDisk) { disk.setFree(4096 * mb) },
			api.HealthDegraded, "under its 1024 MiB floor"},
		{"sandboxes do not start",
			func(e *testEnv, disk *countingDisk) {
				e.h.mu.Lock()
				e.h.failStart = errors.New("no more pids")
				e.h.mu.Unlock()
			},
			func(e *testEnv, disk *countingDisk) {
				e.h.mu.Lock()
				e.h.failStart = nil
				e.h.mu.Unlock()
			},
			api.HealthUnhealthy, "no more pids"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, func(c *config.Config) { c.PoolSize = 1; c.DataDirMinFreeMB = 1024 })
			disk := &countingDisk{fakeDisk: newFakeDisk(4096 * mb)}
			tc.fail(e, disk)
			log := &testutil.Buffer{}
			d := e.startLogged(log, disk)

			// Over a second: 20+40+80+160+200+200+200 ms, 7 tries and a
			// few more for the claims and deletes below; without the
			// back-off, thousands.
			before := disk.count()
			deadline := time.Now().Add(time.Second)
			for time.Now().Before(deadline) {
				// What woke the pool before: creates ending (refused
				// here), sessions going.
				d.tmpl.Wake()
				time.Sleep(5 * time.Millisecond)
			}
			if n := disk.count() - before; n > 15 || n < 3 {
				t.Fatalf("%d refill tries in 1 s, want 3 to 15", n)
			}
			if n := log.Lines("warm pool"); n != 1 {
				t.Fatalf("%d log lines of the pool, want 1 (its state changed once):\n%s", n, log.String())
			}
			if n := log.Lines("disk refused"); n != 0 {
				t.Fatalf("each refused refill logged:\n%s", log.String())
			}
			h, _ := d.node.Health(root)
			pools := h.Checks[api.CheckPools]
			if h.Status != tc.status || pools.OK || !strings.Contains(pools.Detail, "failing since") || !strings.Contains(pools.Detail, tc.detail) {
				t.Fatalf("health while the pool fails: %+v", h)
			}

			tc.heal(e, disk)
			waitPool(t, d, 1) // within the 200 ms cap, woken by nothing
			// The pool's loop notes the refill a moment after it is idle.
			for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
				if h, _ = d.node.Health(root); h.Status == api.HealthOK && h.Checks[api.CheckPools].OK {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("health once the pool refills: %+v", h)
				}
			}
			// The loop clears the pool's error (health) before it logs
			// the recovery.
			testutil.WaitFor(t, 5*time.Second, func() bool { return log.Lines("warm pool: refilling again") > 0 },
				"the pool's recovery is not logged")
			if n := log.Lines("warm pool: refilling again"); n != 1 {
				t.Fatalf("recovery logged %d times:\n%s", n, log.String())
			}
		})
	}
}
