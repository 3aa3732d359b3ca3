package daemon

import (
	"context"
	"time"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/store"
)

// pool keeps sandboxes of the default template started ahead of demand,
// interpreter up: a create claims one and answers in milliseconds, and the
// pool refills behind it, one sandbox at a time so that refills never
// crowd out live requests. A pooled sandbox is started exactly as a fresh
// session's (its id becomes the session's), with the default limits and
// no environment; the claim applies the request's limits, and the
// session's environment goes with every execution. Nothing runs in it
// before the claim but the agent's own start: /workspace and /tmp are
// empty. Pooled sandboxes have no record: after a daemon restart they are
// orphans, removed by reconcile.
type pool struct {
	d    *Daemon
	size int

	kick chan struct{}
	stop context.CancelFunc
	done chan struct{}
}

func newPool(d *Daemon, size int) *pool {
	p := &pool{d: d, size: size, kick: make(chan struct{}, 1), done: make(chan struct{})}
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
		for p.idle() < p.size && ctx.Err() == nil {
			if err := p.add(ctx); err != nil {
				if ctx.Err() != nil {
					return
				}
				p.d.log.Warn("warm pool: start a sandbox", "err", err)
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

func (p *pool) idle() int {
	p.d.mu.Lock()
	defer p.d.mu.Unlock()
	return len(p.d.idle)
}

// add starts one sandbox for the pool.
func (p *pool) add(ctx context.Context) error {
	t := now()
	s := &session{rec: &store.Record{Session: api.Session{
		ID: newID(), Template: DefaultTemplate, Status: api.StatusRunning,
		CreatedAt: t, LastUsedAt: t, Limits: p.d.cfg.Defaults.api(), Network: api.NetworkNone,
	}}}
	if err := p.d.startSandbox(ctx, s); err != nil {
		_ = p.d.destroySession(s)
		return err
	}
	p.d.mu.Lock()
	closed := p.d.closed
	if !closed {
		p.d.idle = append(p.d.idle, s)
	}
	p.d.mu.Unlock()
	if closed {
		return p.d.destroySession(s)
	}
	return nil
}

// claim takes a pooled sandbox for rec, if there is one that fits: the
// default template, the default disk size (a filesystem cannot shrink).
// The sandbox takes rec's limits; rec takes the sandbox's id and ids.
func (p *pool) claim(ctx context.Context, rec *store.Record) *session {
	if rec.Template != DefaultTemplate || rec.Limits.DiskMB != p.d.cfg.Defaults.DiskMB {
		return nil
	}
	for {
		p.d.mu.Lock()
		if len(p.d.idle) == 0 {
			p.d.mu.Unlock()
			return nil
		}
		s := p.d.idle[0]
		p.d.idle = p.d.idle[1:]
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
		if rec.Limits != p.d.cfg.Defaults.api() {
			if err := sb.SetLimits(resourcesOf(rec.Limits)); err != nil {
				p.d.log.Warn("warm pool: apply limits", "err", err)
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
	idle := p.d.idle
	p.d.idle = nil
	p.d.mu.Unlock()
	for _, s := range idle {
		if err := p.d.destroySession(s); err != nil {
			p.d.log.Warn("warm pool: remove a sandbox", "err", err)
		}
	}
}
