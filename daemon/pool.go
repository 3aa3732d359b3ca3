package daemon

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/containerd/errdefs"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/isolation/netpolicy"
	"github.com/sandboxd/sandboxd/store"
)

// poolCheckEvery is how often idle pooled sandboxes are asked whether
// they answer; their death is noticed at once regardless (the exit).
const poolCheckEvery = 30 * time.Second

// poolSpaceWait is how long a pool that gave its surplus's disk to a
// session stays at pool_size (yieldDisk).
const poolSpaceWait = 15 * time.Second

// pool keeps sandboxes of one template started ahead of demand,
// interpreter up and preload done: a create claims one and answers in
// milliseconds, and the pool refills behind it. Its depth follows demand:
// pool_size at least, and after a burst of claims as many as the burst
// had, up to its ceiling (the python template's pool_max_size), for
// poolDemandMemory. All pools share the refill slots (templates.fillSlot,
// one per core): refills run in parallel up to the cores. A create that
// finds the pool empty while a refill is under way waits for that
// sandbox, which started before it could (never slower than a cold
// start, most often faster). A pooled sandbox is
// started exactly as a fresh session's (its id becomes the session's),
// with the template's limits and environment; the claim applies the
// request's limits, and the session's own environment goes with every
// execution. Nothing runs in it before the claim but the agent's start
// and the template's preload: /workspace and /tmp are as a fresh
// session's. Pooled sandboxes have no record: after a daemon restart they
// are orphans, removed by reconcile.
//
// A pooled sandbox that dies (or stops answering its health check) while
// it waits is taken out at once, its disk, ids and runtime state removed,
// counted (sandboxd_pool_sandbox_deaths_total) and replaced: a claim only
// ever hands out a live one.
type pool struct {
	d *Daemon
	t *template

	mu sync.Mutex
	// idle are the sandboxes not yet claimed, oldest first.
	idle []pooled
	// filling counts the refills under way; waiting the claims waiting
	// for one. added is closed (and replaced) when a refill ends.
	filling, waiting int
	added            chan struct{}
	// demand is the recent claims, which set the depth; target is the
	// depth last set, for the API and metrics (size takes a lock they
	// may hold).
	demand demand
	target atomic.Int64
	// netClaimed is when a claim last wanted a network (unix ns; 0:
	// never): see linksAhead.
	netClaimed atomic.Int64
	// floorUntil keeps the pool at pool_size until then: it gave its
	// surplus's disk to a session (yieldDisk).
	floorUntil time.Time

	// retry is whether refills fail, and how long the pool waits before
	// the next (poolretry.go).
	retry *refillRetry

	kick chan struct{}
	stop context.CancelFunc
	done chan struct{}
	// watchers counts the goroutines watching idle sandboxes.
	watchers sync.WaitGroup
}

// pooled is a sandbox waiting in a pool; taken is closed when it leaves
// the idle list (claimed or discarded), which ends its watcher.
type pooled struct {
	s     *session
	taken chan struct{}
}

// newPool starts filling a pool for t.
func newPool(d *Daemon, t *template) *pool {
	p := &pool{d: d, t: t, retry: newRefillRetry(), kick: make(chan struct{}, 1), done: make(chan struct{}), added: make(chan struct{})}
	ctx, cancel := context.WithCancel(d.daemonCtx())
	p.stop = cancel
	go p.fill(ctx)
	return p
}

// fill keeps the pool at its depth until ctx ends, refills in parallel
// (as many as the free refill slots), and checks its idle sandboxes now
// and then, letting go of those past the depth. After a failed refill it
// waits (refillRetry: exponential, capped) before the next; the log says
// once that refills fail, and once that they work again.
func (p *pool) fill(ctx context.Context) {
	var workers sync.WaitGroup
	defer close(p.done)
	defer workers.Wait()
	check := time.NewTicker(poolCheckEvery)
	defer check.Stop()
	results := make(chan error, cap(p.d.tmpl.fillSlot))
	// paused holds refills back after a failure until retry fires, or,
	// for want of disk space, until a session's disk goes (a kick with
	// the ledger's freed count past freedAt). Other kicks (a create's
	// end, a refill slot free: this pool's own failed refill frees one)
	// do not end the wait.
	var retry <-chan time.Time
	paused, pausedForSpace := false, false
	var freedAt uint64
	for {
	refill:
		for !paused && ctx.Err() == nil && p.short() {
			select {
			case p.d.tmpl.fillSlot <- struct{}{}:
			default:
				break refill // every slot busy: one's end wakes every pool
			}
			p.mu.Lock()
			p.filling++
			p.mu.Unlock()
			workers.Add(1)
			go func() {
				defer workers.Done()
				err := p.add(ctx)
				select {
				case results <- err:
				case <-ctx.Done():
				}
			}()
		}
		select {
		case <-ctx.Done():
			return
		case err := <-results:
			if ctx.Err() != nil {
				return
			}
			p.d.tmpl.setPoolError(p.t, err)
			if err == nil {
				if recovered, failures, since := p.retry.succeeded(); recovered {
					p.d.log.Info("warm pool: refilling again", "template", p.t.def.Name, "failures", failures, "after", time.Since(since).Round(time.Millisecond))
				}
				continue
			}
			wait, began := p.retry.failed(time.Now(), err)
			if began {
				p.d.log.Warn("warm pool: cannot start a sandbox; trying again with back-off", "template", p.t.def.Name, "err", err,
					"first_wait", wait, "max_wait", p.retry.max)
			}
			paused, retry = true, time.After(wait)
			pausedForSpace = errdefs.IsResourceExhausted(err)
			freedAt = p.d.disk.Freed()
		case <-retry:
			paused, pausedForSpace, retry = false, false, nil
		case <-p.kick:
			if pausedForSpace && p.d.disk.Freed() != freedAt {
				paused, pausedForSpace, retry = false, false, nil
			}
		case <-check.C:
			p.checkIdle(ctx)
			p.trim()
		}
	}
}

// size is how many sandboxes the pool is to keep now: its floor, raised
// by recent demand up to its ceiling. The caller holds no lock.
func (p *pool) size() int {
	floor, ceiling := p.t.poolSize(), p.ceiling()
	p.mu.Lock()
	yielding := time.Now().Before(p.floorUntil)
	p.mu.Unlock()
	if yielding {
		ceiling = floor
	}
	n := max(floor, min(p.demand.peakNow(p.d.clock.Now()), ceiling))
	p.target.Store(int64(n))
	return n
}

// ceiling is the most the pool may keep: the python template's
// pool_max_size, within what pool_max_total leaves beside the other
// templates' pools; another template's pool stays at its pool_size.
func (p *pool) ceiling() int {
	floor := p.t.poolSize()
	if !p.t.def.Builtin {
		return floor
	}
	return max(floor, min(p.d.cfg.PoolMaxSize, p.d.cfg.PoolMaxTotal-p.d.tmpl.othersPoolSize(p.t)))
}

// short reports whether the pool, with its refills under way, holds
// fewer sandboxes than its size, and may refill now: refills yield to
// creates under way (the last to end wakes the pools) unless the pool is
// empty, when those creates wait for a refill.
func (p *pool) short() bool {
	size := p.size()
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.idle) > 0 && p.d.inCreate.Load() > 0 {
		return false
	}
	return len(p.idle)+p.filling < size
}

// ready counts the sandboxes ready to be claimed.
func (p *pool) ready() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.idle)
}

// trim lets go of the oldest idle sandboxes past the pool's size, once
// the demand that raised it is forgotten.
func (p *pool) trim() { p.trimTo(p.size()) }

// trimTo lets go of the oldest idle sandboxes past size; it reports
// whether it let any go.
func (p *pool) trimTo(size int) bool {
	var surplus []*session
	p.mu.Lock()
	for len(p.idle) > size {
		x := p.idle[0]
		p.idle = p.idle[1:]
		close(x.taken)
		surplus = append(surplus, x.s)
	}
	p.mu.Unlock()
	for _, s := range surplus {
		if err := p.d.destroySession(s); err != nil {
			p.d.log.Warn("warm pool: remove a sandbox", "template", p.t.def.Name, "err", err)
		}
	}
	return len(surplus) > 0
}

// yieldDisk lets go of the sandboxes kept past pool_size (their disks),
// for a session the data dir could not otherwise hold, and keeps the pool
// at pool_size for poolSpaceWait; it reports whether it let any go.
// Refills under way hold disk too: it waits for them (within ctx), and
// lets go of what they made past pool_size.
func (p *pool) yieldDisk(ctx context.Context) bool {
	p.mu.Lock()
	p.floorUntil = time.Now().Add(poolSpaceWait)
	p.mu.Unlock()
	// The depth reported (target) is the floor from now, not once the
	// pool's loop next looks at its size: the create that made room may
	// answer first.
	p.size()
	floor := p.t.poolSize()
	freed := p.trimTo(floor)
	for {
		p.mu.Lock()
		filling, added := p.filling, p.added
		p.mu.Unlock()
		if filling == 0 {
			break
		}
		select {
		case <-added:
		case <-ctx.Done():
			return freed
		}
	}
	return p.trimTo(floor) || freed
}

// poolsYieldDisk has every pool give back what it keeps past its
// pool_size; it reports whether one did.
func (d *Daemon) poolsYieldDisk(ctx context.Context) bool {
	d.tmpl.mu.Lock()
	var pools []*pool
	for _, t := range d.tmpl.byName {
		if t.pool != nil {
			pools = append(pools, t.pool)
		}
	}
	d.tmpl.mu.Unlock()
	freed := false
	for _, p := range pools {
		freed = p.yieldDisk(ctx) || freed
	}
	return freed
}

// add starts one sandbox for the pool in the refill slot the caller took
// (and counted in filling), and gives both back.
func (p *pool) add(ctx context.Context) (err error) {
	defer func() {
		<-p.d.tmpl.fillSlot
		p.mu.Lock()
		p.filling--
		close(p.added)
		p.added = make(chan struct{})
		p.mu.Unlock()
		// A slot is free: every pool may start a refill in it.
		p.d.wakePools()
	}()
	started := time.Now()
	t := now()
	s := newSession(&store.Record{
		ID: newID(), Template: p.t.ref(),
		CreatedAt: t, LastUsedAt: t, Limits: storeLimits(p.t.limits(&p.d.cfg)), Network: api.NetworkNone,
		Env: envList(p.t.def.Env), Runtime: p.runtime(),
	})
	if err := p.d.startSandbox(ctx, s, true); err != nil {
		_ = p.d.destroySession(s)
		return err
	}
	// Its link is made now, closed to everything, so that a claim with a
	// network pays only for its policy.
	if p.d.net != nil && p.d.runtimeInfo(p.runtime()).Networks && s.Snapshot().NetSlot == 0 && p.linksAhead() {
		if err := p.d.applyPolicy(ctx, s, s.Sandbox(), &netpolicy.Policy{Mode: netpolicy.ModeNone}); err != nil {
			p.d.log.Warn("warm pool: plumb a sandbox's network ahead", "template", p.t.def.Name, "err", err)
		}
	}
	p.mu.Lock()
	keep := ctx.Err() == nil && !p.d.sessions.isClosed()
	if keep {
		p.d.metrics.refilled(p.t.metricLabel(), started)
		e := pooled{s: s, taken: make(chan struct{})}
		p.idle = append(p.idle, e)
		p.watchers.Add(1)
		go p.watchIdle(e, s.Sandbox())
	}
	p.mu.Unlock()
	if !keep {
		return p.d.destroySession(s)
	}
	return nil
}

// linksAhead says refills give their sandbox its link ahead: a claim
// wanted a network within poolDemandMemory. A link made ahead saves a
// claim with a network its attach (~1 ms); a claim without one has it
// removed (an nftables batch, a veth's deletion: kernel work beside the
// creates under way, which doubled a burst of 20 claims' latency). So a
// pool whose claims want no network makes no links, and one whose
// claims do makes them again from the first such claim on.
func (p *pool) linksAhead() bool {
	t := p.netClaimed.Load()
	return t != 0 && p.d.clock.Now().Sub(time.Unix(0, t)) < poolDemandMemory
}

// awaitRefill waits for a refill under way to end, if there is one no
// other claim waits for; false if there is none (or ctx ended).
func (p *pool) awaitRefill(ctx context.Context) bool {
	p.mu.Lock()
	if p.filling <= p.waiting {
		p.mu.Unlock()
		return false
	}
	p.waiting++
	added := p.added
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		p.waiting--
		p.mu.Unlock()
	}()
	select {
	case <-added:
		return true
	case <-ctx.Done():
		return false
	}
}

// take removes s from the idle list; false if it is not there (claimed,
// or already taken out).
func (p *pool) take(s *session) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, x := range p.idle {
		if x.s == s {
			p.idle = append(p.idle[:i], p.idle[i+1:]...)
			close(x.taken)
			return true
		}
	}
	return false
}

// takeFirst removes the oldest idle sandbox; nil if there is none.
func (p *pool) takeFirst() *session {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.idle) == 0 {
		return nil
	}
	x := p.idle[0]
	p.idle = p.idle[1:]
	close(x.taken)
	return x.s
}

// watchIdle takes sb out of the pool the moment it dies while it waits.
func (p *pool) watchIdle(e pooled, sb Sandbox) {
	defer p.watchers.Done()
	select {
	case <-sb.Exited():
		if p.take(e.s) {
			p.discard(e.s, sb.Exit().String())
		}
	case <-e.taken:
	}
}

// checkIdle asks each idle sandbox whether it answers, and discards
// those that do not.
func (p *pool) checkIdle(ctx context.Context) {
	p.mu.Lock()
	idle := make([]*session, len(p.idle))
	for i, x := range p.idle {
		idle[i] = x.s
	}
	p.mu.Unlock()
	for _, s := range idle {
		sb := s.Sandbox()
		if sb == nil {
			continue
		}
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := sb.Check(cctx)
		cancel()
		if err == nil {
			err = p.d.disk.Writable(s.ID())
		}
		if err != nil && ctx.Err() == nil && p.take(s) {
			p.discard(s, "failed its health check: "+err.Error())
		}
	}
}

// discard removes a pooled sandbox that died or does not answer, counts
// it, and has the pool refill.
func (p *pool) discard(s *session, why string) {
	p.d.metrics.poolDeaths.WithLabelValues(p.t.metricLabel()).Inc()
	p.d.log.Warn("warm pool: a waiting sandbox is gone; replacing it", "template", p.t.def.Name, "sandbox", s.ID(), "why", why)
	if err := p.d.destroySession(s); err != nil {
		p.d.log.Warn("warm pool: remove a sandbox", "template", p.t.def.Name, "err", err)
	}
	p.wake()
}

// wake has the pool check its size.
func (p *pool) wake() {
	select {
	case p.kick <- struct{}{}:
	default:
	}
}

// claim takes a pooled sandbox for rec, if there is one that fits: the
// template's disk size (a filesystem cannot shrink). The sandbox takes
// rec's limits; rec takes the sandbox's id and ids. A wait for a refill
// is a step of clock's ("wait").
// runtime is the runtime of the pool's sandboxes (its template's): a
// session asking for another starts cold.
func (p *pool) runtime() string { return p.t.runtime(&p.d.cfg) }

func (p *pool) claim(ctx context.Context, rec *store.Record, clock *stepClock) *session {
	def := storeLimits(p.t.limits(&p.d.cfg))
	// A pooled sandbox binds no MCP gateway.
	if rec.Limits.DiskMB != def.DiskMB || rec.Runtime != p.runtime() || len(rec.MCPServers) > 0 {
		return nil
	}
	// gVisor keeps a sandbox's pids limit inside it, set at its start
	// (RLIMIT_NPROC), and its memory is watched for the limit it started
	// with: other limits need a sandbox of their own.
	if rec.Runtime == api.RuntimeRunsc && (rec.Limits.Pids != def.Pids || rec.Limits.MemoryMB != def.MemoryMB) {
		return nil
	}
	// The refill starts once the create is done (newSession wakes the
	// pools): on a host of few cores a sandbox starting beside it slows
	// every step of it, the durable write most (the host filesystem's
	// journal commits the refill's disk image with the record).
	claimed := p.d.clock.Now()
	p.demand.note(claimed, p.ceiling())
	if rec.Network != api.NetworkNone {
		p.netClaimed.Store(claimed.UnixNano())
	}
	for {
		s := p.takeFirst()
		if s == nil {
			// A refill under way started before this claim: its sandbox
			// is ready sooner than a cold start would be. Refills start
			// now, the pool being short.
			p.wake()
			if p.awaitRefill(ctx) {
				clock.lap("wait")
				continue
			}
			return nil
		}
		sb := s.Sandbox()
		select {
		case <-sb.Exited():
			p.discard(s, sb.Exit().String()) // died as it was claimed
			continue
		default:
		}
		// A sandbox killed a moment ago, its exit not yet seen, is not
		// handed out. Its agent is not asked (its health check does that
		// every poolCheckEvery): a claim costs no wake-up of it.
		if !sb.Alive() {
			p.discard(s, "its first process is gone")
			continue
		}
		// Its disk must take writes: an ext4 image that met an error (the
		// host's disk full under it) is remounted read-only, and its
		// session would get a /workspace where every write fails.
		if err := p.d.disk.Writable(s.ID()); err != nil {
			p.discard(s, "its disk failed its check at claim: "+err.Error())
			continue
		}
		if rec.Limits != def {
			if err := sb.SetLimits(limitsOf(rec.Limits)); err != nil {
				p.d.log.Warn("warm pool: apply limits", "template", p.t.def.Name, "err", err)
				_ = p.d.destroySession(s)
				return nil
			}
		}
		// The session is the caller's now: its record, but for what the
		// pooled sandbox already is (its id, id block and network slot;
		// its state stays the session's own).
		s.Update(func(r *store.Record) {
			rec.ID, rec.IDBase, rec.NetSlot = r.ID, r.IDBase, r.NetSlot
			*r = *rec
		})
		// A pooled sandbox's link waits closed: the session's policy opens
		// it, or for network "none" it goes (after the answer: until then
		// it lets nothing through), but a runsc sandbox's, which it could
		// not have again (linkAtStart).
		if rec.Network == api.NetworkNone {
			if !p.d.linkAtStart(p.runtime()) {
				p.d.dropLinkLater(s)
			}
		} else if err := p.d.ensureNetwork(ctx, s, sb); err != nil {
			p.d.log.Warn("warm pool: give a claimed sandbox its network", "template", p.t.def.Name, "err", err)
			_ = p.d.destroySession(s)
			return nil
		}
		return s
	}
}

// close stops the refills and destroys the idle sandboxes.
func (p *pool) close() {
	p.stop()
	<-p.done
	var idle []*session
	for s := p.takeFirst(); s != nil; s = p.takeFirst() {
		idle = append(idle, s)
	}
	for _, s := range idle {
		if err := p.d.destroySession(s); err != nil {
			p.d.log.Warn("warm pool: remove a sandbox", "template", p.t.def.Name, "err", err)
		}
	}
	p.watchers.Wait()
}

// wakePools has every pool check its size: a session went, and a pool
// waiting for disk space may find it now.
func (d *Daemon) wakePools() {
	d.tmpl.mu.Lock()
	defer d.tmpl.mu.Unlock()
	for _, t := range d.tmpl.byName {
		if t.pool != nil {
			t.pool.wake()
		}
	}
}

// closePools empties every warm pool, for good.
func (d *Daemon) closePools() {
	d.tmpl.mu.Lock()
	var pools []*pool
	for _, t := range d.tmpl.byName {
		if t.pool != nil {
			pools = append(pools, t.pool)
			t.pool = nil
		}
	}
	d.tmpl.mu.Unlock()
	for _, p := range pools {
		p.close()
	}
}
