package e2b

import (
	"context"
	"time"
)

// sweepEvery is how often the sweeper looks for ended sandboxes.
const sweepEvery = 10 * time.Second

// Sweep deletes, until ctx ends, the gateway's sessions that ended (their
// timeout stopped them, or their sandbox failed): E2B kills a sandbox at
// its timeout, and its files with it. A lookup deletes such a session at
// once; the sweep catches those nobody asks about.
func (g *Gateway) Sweep(ctx context.Context) {
	t := time.NewTicker(sweepEvery)
	defer t.Stop()
	for {
		g.sweep(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (g *Gateway) sweep(ctx context.Context) {
	all, err := g.o.Daemon.ListSessions(ctx, map[string]string{labelGateway: g.o.ID.ID})
	if err != nil {
		if ctx.Err() == nil {
			g.o.Log.Warn("list the gateway's sandboxes", "err", err)
		}
		return
	}
	for _, s := range all {
		if !live(s.Status) {
			g.discard(ctx, s.ID)
		}
	}
}
