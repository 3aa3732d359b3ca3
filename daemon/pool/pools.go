package pool

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/sandboxd/sandboxd/api"
)

// StartPools starts the warm pool of every template that has one.
func (ts *Templates) StartPools() {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	for _, t := range ts.byName {
		if t.poolSize() > 0 && t.broken == "" && !t.adding {
			t.pool = newPool(ts, t)
		}
	}
}

// pools are the warm pools there are now.
func (ts *Templates) pools() []*Pool {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	var pools []*Pool
	for _, t := range ts.byName {
		if t.pool != nil {
			pools = append(pools, t.pool)
		}
	}
	return pools
}

// Wake has every pool check its size: a session went, and a pool
// waiting for disk space may find it now.
func (ts *Templates) Wake() {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	for _, t := range ts.byName {
		if t.pool != nil {
			t.pool.wake()
		}
	}
}

// YieldDisk has every pool give back what it keeps past its pool_size;
// it reports whether one did.
func (ts *Templates) YieldDisk(ctx context.Context) bool {
	freed := false
	for _, p := range ts.pools() {
		freed = p.yieldDisk(ctx) || freed
	}
	return freed
}

// Close empties every warm pool, for good.
func (ts *Templates) Close() {
	ts.mu.Lock()
	var pools []*Pool
	for _, t := range ts.byName {
		if t.pool != nil {
			pools = append(pools, t.pool)
			t.pool = nil
		}
	}
	ts.mu.Unlock()
	for _, p := range pools {
		p.close()
	}
}

// Fills are the pools of the templates the caller of ctx may use, by
// the key their template has (its reference), as /v1/info and /v1/node
// show them; startable leaves out the templates that cannot start.
func (ts *Templates) Fills(ctx context.Context, startable bool) map[string]api.PoolFill {
	c := ts.o.Caller(ctx)
	ts.mu.Lock()
	defer ts.mu.Unlock()
	out := map[string]api.PoolFill{}
	for name, t := range ts.byName {
		if t.adding || startable && t.broken != "" || !c.MayUseTemplate(t.def.OwnerUID) {
			continue
		}
		out[name] = t.fill()
	}
	return out
}

// Depths are the warm pools' fills by metrics label (sandboxd_pool_sandboxes):
// users' templates share one label, their pools added up.
func (ts *Templates) Depths() map[string]api.PoolFill {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	fills := map[string]api.PoolFill{}
	for _, t := range ts.byName {
		if t.pool != nil {
			f, g := fills[t.MetricLabel()], t.fill()
			f.Idle, f.Target, f.Size = f.Idle+g.Idle, f.Target+g.Target, f.Size+g.Size
			fills[t.MetricLabel()] = f
		}
	}
	return fills
}

// Health is why warm pools fail to refill (the first by template, and
// how many more), nil if none does; short says each of them fails for
// want of disk space alone.
func (ts *Templates) Health() (err error, short bool) {
	var errs []string
	short = true
	now := time.Now()
	ts.mu.Lock()
	for _, t := range ts.byName {
		if t.pool == nil {
			continue
		}
		if perr, noSpace := t.pool.retry.problem(now); perr != nil {
			errs = append(errs, fmt.Sprintf("template %s: the warm pool cannot start a sandbox: %v", t.def.Name, perr))
			short = short && noSpace
		}
	}
	ts.mu.Unlock()
	if len(errs) == 0 {
		return nil, false
	}
	slices.Sort(errs)
	if len(errs) > 1 {
		return fmt.Errorf("%s (and %d more)", errs[0], len(errs)-1), short
	}
	return errors.New(errs[0]), short
}
