package daemon

import (
	"context"
	"fmt"
	"time"

	"github.com/containerd/errdefs"
	"github.com/sandboxd/sandboxd/daemon/disk"
	"github.com/sandboxd/sandboxd/daemon/execution"
	"github.com/sandboxd/sandboxd/daemon/mcpgateway"
	"github.com/sandboxd/sandboxd/daemon/metrics"
	"github.com/sandboxd/sandboxd/daemon/pool"
	"github.com/sandboxd/sandboxd/internal/logging"
	"github.com/sandboxd/sandboxd/isolation"
	"github.com/sandboxd/sandboxd/isolation/idmap"
	"github.com/sandboxd/sandboxd/isolation/volume"
	"github.com/sandboxd/sandboxd/store"
)

// launcher starts sessions' sandboxes and destroys them: what a sandbox
// is made of (its user-namespace ids, its disk, its MCP gateway, its
// network, the runtime's container) is put together here, and taken apart
// in the reverse order. The table's sessions, the pools' and a
// template's trials all start through it; it records nothing (the
// journal does) and takes no session's operation (its callers do).
type launcher struct {
	paths    layout
	rt       Runtime
	runtimes runtimeRules
	// ids gives sessions their user-namespace id blocks; nil when off.
	ids     *idmap.Allocator
	disk    *disk.Admission
	gateway *mcpgateway.Gateway
	net     sessionNets
	execs   *execution.Book
	metrics *metrics.Metrics
	denied  *deniedLog
	own     context.Context
	// tmpl are the templates sandboxes start from, set once package pool
	// made them: their pools start sandboxes through the launcher, so it
	// exists first.
	tmpl *pool.Templates
}

// start starts the session's sandbox over its (possibly existing)
// workspace; warm waits until its interpreter has fully started (for the
// pools). The caller holds no lock: starting takes tens of milliseconds.
// It does not watch the sandbox: the session's owner (the table, or a
// pool) does.
func (l *launcher) start(ctx context.Context, s *session, warm bool) error {
	if err := l.assignIDs(s); err != nil {
		return err
	}
	rec := s.Snapshot()
	t, err := l.tmpl.ForStart(rec.Template)
	if err != nil {
		return err
	}
	// Checked at every start: a stopped session of runc stays stopped on
	// a daemon since made strict about runsc.
	if _, err := l.runtimes.check(runtimeOf(rec.Runtime)); err != nil {
		return err
	}
	t0 := time.Now()
	// A cold start may have the pools give back what they keep past
	// their pool_size; a pool's own refill may not.
	owner, yield := disk.Session(rec.OwnerUID), l.tmpl.YieldDisk
	if warm {
		owner, yield = disk.Pool, nil
	}
	if err := l.disk.Ensure(ctx, rec.ID, rec.Limits.DiskMB, owner, yield); err != nil {
		if errdefs.IsResourceExhausted(err) {
			return err // the data dir cannot hold it: the sentence is the caller's
		}
		return fmt.Errorf("session %s disk: %w", rec.ID, err)
	}
	diskTook := time.Since(t0)
	spec := l.spec(s, &rec)
	spec.Image, spec.Warm = t.Image(), warm
	spec.Preload, spec.Packages = t.Boot()
	spec.Memory, s.memory = s.memory, ""
	if err := openGateway(l.gateway, l.rt, &rec); err != nil {
		return fmt.Errorf("session %s MCP gateway: %w", rec.ID, err)
	}
	tn := time.Now()
	ns, err := l.net.ahead(ctx, s)
	if err != nil {
		return err
	}
	network := time.Since(tn)
	if ns != nil {
		spec.NetNS = isolation.NetNSPath(ns)
	}
	sb, err := l.rt.Start(ctx, spec)
	if ns != nil {
		ns.Close() // the sandbox holds it now, or it goes with its link
	}
	if err != nil && spec.Memory != "" && ctx.Err() == nil {
		// A memory image this runtime cannot restore (another runsc
		// build or platform than the one that saved it): the session
		// starts afresh on the snapshot's files, and its first execution
		// says so.
		logging.From(ctx).Warn("restore from a memory snapshot failed: starting afresh", "session", rec.ID, "err", err)
		s.SetResetUntold()
		if err := l.net.release(ctx, s, true); err != nil {
			return err
		}
		return l.start(ctx, s, warm)
	}
	if err != nil {
		return fmt.Errorf("start sandbox for session %s: %w", rec.ID, err)
	}
	if ns == nil {
		tn := time.Now()
		if err := l.net.ensure(ctx, s, sb); err != nil {
			_ = sb.Stop()
			return err
		}
		network += time.Since(tn)
	}
	st := sb.StartTimings()
	l.metrics.SandboxStarted(runtimeOf(rec.Runtime), diskTook, st.Prepare, st.Container, st.Agent, network)
	logging.From(ctx).Debug("sandbox started", "session", rec.ID, "template", rec.Template, "took", time.Since(t0),
		"disk", diskTook, "prepare", st.Prepare, "container", st.Container, "agent", st.Agent, "network", network)
	if err := s.SetRunning(sb); err != nil {
		_ = sb.Stop()
		return err
	}
	// Its interpreters are new: no parked copy of the old ones is left.
	s.undo.forget()
	return nil
}

// spec is what the session's sandbox is, for a start or a restore.
func (l *launcher) spec(s *session, rec *store.Record) *isolation.Spec {
	dir := l.paths.session(rec.ID)
	return &isolation.Spec{
		ID:            rec.ID,
		Workspace:     volume.Workspace(dir),
		Tmp:           volume.Tmp(dir),
		Limits:        limitsOf(rec.Limits),
		Env:           rec.Env,
		IDBase:        rec.IDBase,
		Runtime:       runtimeOf(rec.Runtime),
		Gateway:       l.gateway.Dir(rec.ID, rec.MCPServers),
		User:          l.tmpl.UserOf(rec.Template),
		OnUndelivered: func(r *isolation.ExecResult) { l.execs.Undelivered(s, r) },
		Volumes:       volumeSpecs(l.paths, rec.Volumes),
	}
}

// assignIDs gives a session its block of user-namespace ids, if sandboxes
// get user namespaces and it has none yet (it is new, or older than the
// setting). The block stays the session's until it is deleted, so its files
// keep their owner across stops and restarts.
func (l *launcher) assignIDs(s *session) error {
	if l.ids == nil {
		return nil
	}
	var err error
	s.Update(func(r *store.Record) {
		if r.IDBase != 0 {
			return
		}
		r.IDBase, err = l.ids.Allocate()
	})
	return err
}

// releaseIDs gives a deleted session's id block back.
func (l *launcher) releaseIDs(s *session) {
	var base uint32
	s.Update(func(r *store.Record) { base, r.IDBase = r.IDBase, 0 })
	if l.ids != nil && base != 0 {
		l.ids.Release(base)
	}
}

// destroy removes a session's sandbox and folders.
func (l *launcher) destroy(s *session) error {
	if sb := s.TakeSandbox(); sb != nil {
		if err := sb.Stop(); err != nil {
			return err
		}
	}
	id := s.ID()
	if l.denied != nil {
		l.denied.forget(id)
	}
	if err := l.gateway.RemoveSession(id); err != nil {
		return err
	}
	if err := l.net.release(l.own, s, false); err != nil {
		return err
	}
	l.metrics.ForgetDNS(id)
	if err := volume.Remove(l.paths.session(id)); err != nil {
		return err
	}
	l.disk.Forget(id)
	// Only now: nothing owned by the block is left for its next session.
	l.releaseIDs(s)
	return nil
}

// restore takes back the sandbox a previous daemon left running for s
// (rec is its record): its MCP gateway is served again, and its link is
// where it was, its policy written anew from its record and the DNS told
// its addresses again.
func (l *launcher) restore(ctx context.Context, s *session, rec *store.Record) (Sandbox, error) {
	log := logging.From(ctx)
	if err := openGateway(l.gateway, l.rt, rec); err != nil {
		log.Warn("restored session's MCP gateway", "session", rec.ID, "err", err)
	}
	sb, err := l.rt.Restore(ctx, l.spec(s, rec))
	if err != nil {
		return nil, err
	}
	if err := l.net.restore(ctx, s, sb); err != nil {
		log.Warn("restored session's network", "session", rec.ID, "err", err)
	}
	return sb, nil
}
