package daemon

import (
	"context"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/daemon/node"
	"github.com/sandboxd/sandboxd/store"
)

// nodeSource is what the node (package daemon/node) reads of the daemon:
// the sessions and pools the caller may see, the runtimes, the checks of
// /v1/health and the root-only rule (authz.go).
type nodeSource struct{ d *Daemon }

var _ node.Source = nodeSource{}

func (s nodeSource) Sessions(ctx context.Context) []store.Record {
	caller := callerFrom(ctx)
	var recs []store.Record
	for _, ss := range s.d.sessions.all() {
		if rec := ss.Snapshot(); caller.mayUse(rec.OwnerUID) {
			recs = append(recs, rec)
		}
	}
	return recs
}

func (s nodeSource) Pools(ctx context.Context) map[string]api.NodePool {
	pools := map[string]api.NodePool{}
	for name, f := range s.d.tmpl.Fills(ctx, true) {
		pools[name] = api.NodePool{Ready: f.Idle, Target: f.Size}
	}
	return pools
}

func (s nodeSource) Runtimes() []string { return s.d.runtimes.usable() }

func (s nodeSource) Volumes(ctx context.Context) api.NodeVolumes {
	var n api.NodeVolumes
	all, _ := s.d.store.Volumes()
	for _, v := range all {
		if callerFrom(ctx).mayUse(v.OwnerUID) {
			n.Count++
			n.SizeMB += v.SizeMB
		}
	}
	return n
}

func (s nodeSource) RequireRoot(ctx context.Context, what string) error {
	return callerFrom(ctx).requireRoot(what)
}

func (s nodeSource) DatabaseWritable() error { return s.d.store.Writable() }

func (s nodeSource) CgroupsWritable() error { return s.d.rt.CgroupsWritable() }

func (s nodeSource) DataDirSpace() (int64, bool, error) { return s.d.disk.Space() }

// PoolsHealth is why warm pools fail to refill (pool.Templates.Health).
func (s nodeSource) PoolsHealth() (err error, short bool) { return s.d.tmpl.Health() }
