package daemon

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

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
	caller := callerFrom(ctx)
	pools := map[string]api.NodePool{}
	tm := s.d.tmpl
	tm.mu.Lock()
	defer tm.mu.Unlock()
	for name, t := range tm.byName {
		if t.adding || t.broken != "" || !caller.mayUseTemplate(t.def.OwnerUID) {
			continue
		}
		f := t.fill()
		pools[name] = api.NodePool{Ready: f.Idle, Target: f.Size}
	}
	return pools
}

func (s nodeSource) Runtimes() []string { return s.d.usableRuntimes() }

func (s nodeSource) RequireRoot(ctx context.Context, what string) error {
	return callerFrom(ctx).requireRoot(what)
}

func (s nodeSource) DatabaseWritable() error { return s.d.store.Writable() }

func (s nodeSource) CgroupsWritable() error { return s.d.rt.CgroupsWritable() }

func (s nodeSource) DataDirSpace() (int64, bool, error) { return s.d.disk.Space() }

// PoolsHealth is why warm pools fail to refill (the first by template,
// and how many more), nil if none does; short says each of them fails
// for want of disk space alone.
func (s nodeSource) PoolsHealth() (err error, short bool) {
	var errs []string
	short = true
	now := time.Now()
	tm := s.d.tmpl
	tm.mu.Lock()
	for _, t := range tm.byName {
		if t.pool == nil {
			continue
		}
		if perr, noSpace := t.pool.retry.problem(now); perr != nil {
			errs = append(errs, fmt.Sprintf("template %s: the warm pool cannot start a sandbox: %v", t.def.Name, perr))
			short = short && noSpace
		}
	}
	tm.mu.Unlock()
	if len(errs) == 0 {
		return nil, false
	}
	slices.Sort(errs)
	if len(errs) > 1 {
		return fmt.Errorf("%s (and %d more)", errs[0], len(errs)-1), short
	}
	return errors.New(errs[0]), short
}
