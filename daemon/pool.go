package daemon

import (
	"context"
	"time"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/store"
)

// pool keeps sandboxes of one template started ahead of demand,
// interpreter up and preload done: a create claims one and answers in
// milliseconds, and the pool refills behind it. All pools share one
// refill slot (Daemon.fillSlot), so refills start one sandbox at a time
// host-wide and never crowd out live requests. A pooled sandbox is
// started exactly as a fresh session's (its id becomes the session's),
// with the template's limits and environment; the claim applies the
// request's limits, and the session's own environment goes with every
// execution. Nothing runs in it before the claim but the agent's start
// and the template's preload: /workspace and /tmp are as a fresh
// session's. Pooled sandboxes have no record: after a daemon restart they
// are orphans, removed by reconcile.
type pool struct {
	d *Daemon
	t *template
	// idle, under Daemon.mu, are the sandboxes not yet claimed.
	idle []*session

	kick chan struct{}
	stop context.CancelFunc
	done chan struct{}
}

// newPool starts filling a pool for t. The caller holds d.mu.
func newPool(d *Daemon, t *template) *pool {
	p := &pool{d: d, t: t, kick: make(chan struct{}, 1), done: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	p.stop = cancel
	go p.fill(ctx)
	return p
}

// fill keeps the pool at its size until ctx ends.
func (p *pool) fill(ctx context.Context) {
	defer close(p.done)
	backoff := time.Second
	for {
		for p.short() && ctx.Err() == nil {
			err := p.add(ctx)
			if ctx.Err() != nil {
				return
			}
			p.d.setPoolError(p.t, err)
			if err != nil {
				p.d.log.Warn("warm pool: start a sandbox", "template", p.t.def.Name, "err", err)
				select {
				case <-ctx.Done():
					return
				case <-time.After(backoff):
				}
				backoff = min(backoff*2, time.Minute)
				continue
			}
			backoff = time.Second
		}
		select {
		case <-ctx.Done():
			return
		case <-p.kick:
		}
	}
}

// short reports whether the pool holds fewer sandboxes than its size.
func (p *pool) short() bool {
	p.d.mu.Lock()
	defer p.d.mu.Unlock()
	return len(p.idle) < p.t.poolSize()
}

// add starts one sandbox for the pool, in the refill slot.
func (p *pool) add(ctx context.Context) error {
	select {
	case p.d.fillSlot <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-p.d.fillSlot }()
	t := now()
	s := &session{rec: &store.Record{Session: api.Session{
		ID: newID(), Template: p.t.def.Name, Status: api.StatusRunning,
		CreatedAt: t, LastUsedAt: t, Limits: p.t.limits(&p.d.cfg), Network: api.NetworkNone,
	}, Env: envList(p.t.def.Env)}}
	if err := p.d.startSandbox(ctx, s, true); err != nil {
		_ = p.d.destroySession(s)
		return err
	}
	p.d.mu.Lock()
	keep := !p.d.closed && ctx.Err() == nil
	if keep {
		p.idle = append(p.idle, s)
	}
	p.d.mu.Unlock()
	if !keep {
		return p.d.destroySession(s)
	}
	return nil
}

// claim takes a pooled sandbox for rec, if there is one that fits: the
// template's disk size (a filesystem cannot shrink). The sandbox takes
// rec's limits; rec takes the sandbox's id and ids.
func (p *pool) claim(ctx context.Context, rec *store.Record) *session {
	def := p.t.limits(&p.d.cfg)
	if rec.Limits.DiskMB != def.DiskMB {
		return nil
	}
	for {
		p.d.mu.Lock()
		if len(p.idle) == 0 {
			p.d.mu.Unlock()
			return nil
		}
		s := p.idle[0]
		p.idle = p.idle[1:]
		p.d.mu.Unlock()
		select {
		case p.kick <- struct{}{}:
		default:
		}
		s.mu.Lock()
		sb := s.sb
		s.mu.Unlock()
		select {
		case <-sb.Exited():
			_ = p.d.destroySession(s) // died in the pool
			continue
		default:
		}
		if rec.Limits != def {
			if err := sb.SetLimits(resourcesOf(rec.Limits)); err != nil {
				p.d.log.Warn("warm pool: apply limits", "template", p.t.def.Name, "err", err)
				_ = p.d.destroySession(s)
				return nil
			}
		}
		s.mu.Lock()
		rec.ID, rec.IDBase = s.rec.ID, s.rec.IDBase
		s.rec = rec
		s.mu.Unlock()
		return s
	}
}

// close stops the refills and destroys the idle sandboxes.
func (p *pool) close() {
	p.stop()
	<-p.done
	p.d.mu.Lock()
	idle := p.idle
	p.idle = nil
	p.d.mu.Unlock()
	for _, s := range idle {
		if err := p.d.destroySession(s); err != nil {
			p.d.log.Warn("warm pool: remove a sandbox", "template", p.t.def.Name, "err", err)
		}
	}
}
