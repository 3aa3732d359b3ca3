package daemon

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/containerd/errdefs"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/daemon/disk"
	"github.com/sandboxd/sandboxd/daemon/pool"
	"github.com/sandboxd/sandboxd/internal/logging"
	"github.com/sandboxd/sandboxd/isolation"
	"github.com/sandboxd/sandboxd/isolation/volume"
	"github.com/sandboxd/sandboxd/store"
)

// CreateSession starts a new session, ready to execute, owned by the caller.
func (d *Daemon) CreateSession(ctx context.Context, req *api.CreateSessionRequest) (*api.Session, error) {
	s, err := d.createSession(ctx, req, nil)
	if err != nil {
		return nil, err
	}
	out := s.snapshot()
	return &out, nil
}

// createSession makes a persistent session; idem, if not nil, is the
// Idempotency-Key it is made under.
func (d *Daemon) createSession(ctx context.Context, req *api.CreateSessionRequest, idem *store.Idempotency) (*session, error) {
	return d.newSession(ctx, req, true, func(r *store.Record) { r.Idempotency = idem })
}

// newSession checks the request, reserves a place under the quotas, and
// starts the sandbox. A persistent session is recorded and listed, and
// counts under the quotas as a running session from then on. A one-shot
// one (POST /v1/run) is neither recorded nor listed: it keeps its
// reservation, which the caller releases when it destroys the sandbox.
func (d *Daemon) newSession(ctx context.Context, req *api.CreateSessionRequest, persist bool, mark ...func(*store.Record)) (_ *session, retErr error) {
	clock := d.metrics.CreateClock(time.Now())
	// Refills wait while creates are under way (pool.short): the last to
	// end starts them.
	d.inCreate.Add(1)
	defer func() {
		if d.inCreate.Add(-1) == 0 {
			d.tmpl.Wake()
		}
	}()
	if err := callerFrom(ctx).requireKnown(); err != nil {
		return nil, err
	}
	if err := d.node.CheckDraining(); err != nil {
		return nil, err
	}
	rec, t, err := d.checkCreate(ctx, req)
	if err != nil {
		return nil, err
	}
	for _, m := range mark {
		m(rec)
	}
	owner := rec.OwnerUID
	if persist {
		release, err := d.sessions.claimName(owner, rec.Name)
		if err != nil {
			return nil, err
		}
		defer release() // once added, the session holds its name
	}
	if err := d.sessions.reserve(owner, d.cfg.MaxSessions, d.cfg.MaxSessionsPerUID); err != nil {
		return nil, err
	}
	defer func() {
		if persist || retErr != nil {
			d.sessions.release(owner)
		}
	}()
	// The user's disks stay within their share (disk_share_per_uid),
	// claimed from a pool or made cold.
	if err := d.disk.CheckShare(ctx, owner, rec.Limits.DiskMB); err != nil {
		return nil, err
	}

	clock.Lap("admit")
	started := time.Now()
	var s *session
	if p := d.tmpl.PoolOf(t); p != nil {
		if sb := p.Claim(ctx, rec, clock.Lap); sb != nil {
			s = sessionOf(sb)
		}
		d.metrics.PoolClaim(t.MetricLabel(), s != nil)
	}
	source := "pool"
	if s != nil {
		// The pooled sandbox's disk is the user's from now on; a create
		// of theirs that raced this one may have taken the share.
		if err := d.disk.Adopt(ctx, rec.ID, owner); err != nil {
			_ = d.destroySession(s)
			return nil, err
		}
		clock.Lap("claim")
	} else {
		source = "cold"
		s = newSession(rec)
		if err := d.startSandbox(ctx, s, false); err != nil {
			d.metrics.CreateFailed()
			_ = d.destroySession(s)
			return nil, err
		}
		clock.Lap("start")
	}
	d.metrics.Created(source == "pool", time.Since(started))
	if !persist {
		clock.Observe(source)
		go d.watch(s, s.Sandbox())
		return s, nil
	}
	// The record is durable before the answer: a crash after it finds the
	// session, one before it an orphan sandbox that reconcile removes.
	// The session's record, not rec: starting it gave it its id block
	// and network slot.
	final := s.Snapshot()
	if err := d.store.PutSession(&final); err != nil {
		_ = d.destroySession(s)
		return nil, recordErr(rec.ID, err)
	}
	clock.Lap("record")
	clock.Observe(source)
	d.sessions.add(s)
	go d.watch(s, s.Sandbox())
	d.publish(s, api.ActionCreated, "")
	logging.From(ctx).Info("session created", "session", rec.ID, "owner", owner, "from", source, "took", time.Since(started))
	return s, nil
}

// checkCreate turns a request into a new record, or says what is wrong.
func (d *Daemon) checkCreate(ctx context.Context, req *api.CreateSessionRequest) (*store.Record, *pool.Template, error) {
	name := req.Template
	if name == "" {
		name = pool.DefaultTemplate
	}
	t, err := d.tmpl.ForUse(ctx, name)
	if err != nil {
		return nil, nil, err
	}
	policy, err := checkNetwork(req.Network, req.Allow, req.EgressKbps, req.MaxConnections, defaultCaps(&d.cfg), d.net.off)
	if err != nil {
		return nil, nil, err
	}
	runtime, err := d.runtimes.forSession(req.Runtime, t.Def().Runtime, policy.Mode)
	if err != nil {
		return nil, nil, err
	}
	limits, err := resolveLimits(&d.cfg, t.Limits(), requestLimits(req))
	if err != nil {
		return nil, nil, err
	}
	if err := checkEnv(req.Env); err != nil {
		return nil, nil, err
	}
	if err := api.CheckLabels(req.Labels); err != nil {
		return nil, nil, err
	}
	if err := d.gateway.CheckGrant(req.MCPServers); err != nil {
		return nil, nil, err
	}
	if err := checkIdleAction(req.IdleAction); err != nil {
		return nil, nil, err
	}
	if err := checkName(req.Name); err != nil {
		return nil, nil, err
	}
	// The template's environment, then the session's over it.
	env := maps.Clone(t.Def().Env)
	if env == nil {
		env = map[string]string{}
	}
	maps.Copy(env, req.Env)
	at := now()
	return &store.Record{
		ID:         newID(),
		Name:       req.Name,
		OwnerUID:   callerFrom(ctx).UID,
		Template:   t.Ref(),
		CreatedAt:  at,
		LastUsedAt: at,
		Limits:     storeLimits(limits),
		Network:    policy.Mode,
		Allow:      allowList(policy),
		EgressKbps: policy.EgressKbps, MaxConnections: policy.MaxConnections,
		Labels:     req.Labels,
		Env:        envList(env),
		Runtime:    runtime,
		MCPServers: slices.Clone(req.MCPServers),
		IdleAction: cmp.Or(req.IdleAction, d.cfg.IdleAction),
	}, t, nil
}

// startSandbox starts the session's sandbox over its (possibly existing)
// workspace; warm waits until its interpreter has fully started (for the
// pools). The caller holds no lock: starting takes tens of milliseconds.
// It does not watch the sandbox: the session's owner (the table, or a
// pool) does.
func (d *Daemon) startSandbox(ctx context.Context, s *session, warm bool) error {
	if err := d.assignIDs(s); err != nil {
		return err
	}
	rec := s.Snapshot()
	t, err := d.tmpl.ForStart(rec.Template)
	if err != nil {
		return err
	}
	// Checked at every start: a stopped session of runc stays stopped on
	// a daemon since made strict about runsc.
	if _, err := d.runtimes.check(runtimeOf(rec.Runtime)); err != nil {
		return err
	}
	t0 := time.Now()
	// A cold start may have the pools give back what they keep past
	// their pool_size; a pool's own refill may not.
	owner, yield := disk.Session(rec.OwnerUID), d.tmpl.YieldDisk
	if warm {
		owner, yield = disk.Pool, nil
	}
	if err := d.disk.Ensure(ctx, rec.ID, rec.Limits.DiskMB, owner, yield); err != nil {
		if errdefs.IsResourceExhausted(err) {
			return err // the data dir cannot hold it: the sentence is the caller's
		}
		return fmt.Errorf("session %s disk: %w", rec.ID, err)
	}
	diskTook := time.Since(t0)
	spec := d.sandboxSpec(s, &rec)
	spec.Image, spec.Warm = t.Image(), warm
	spec.Preload, spec.Packages = t.Boot()
	if err := openGateway(d.gateway, d.rt, &rec); err != nil {
		return fmt.Errorf("session %s MCP gateway: %w", rec.ID, err)
	}
	tn := time.Now()
	ns, err := d.net.ahead(ctx, s)
	if err != nil {
		return err
	}
	network := time.Since(tn)
	if ns != nil {
		spec.NetNS = isolation.NetNSPath(ns)
	}
	sb, err := d.rt.Start(ctx, spec)
	if ns != nil {
		ns.Close() // the sandbox holds it now, or it goes with its link
	}
	if err != nil {
		return fmt.Errorf("start sandbox for session %s: %w", rec.ID, err)
	}
	if ns == nil {
		tn := time.Now()
		if err := d.net.ensure(ctx, s, sb); err != nil {
			_ = sb.Stop()
			return err
		}
		network += time.Since(tn)
	}
	st := sb.StartTimings()
	d.metrics.SandboxStarted(runtimeOf(rec.Runtime), diskTook, st.Prepare, st.Container, st.Agent, network)
	logging.From(ctx).Debug("sandbox started", "session", rec.ID, "template", rec.Template, "took", time.Since(t0),
		"disk", diskTook, "prepare", st.Prepare, "container", st.Container, "agent", st.Agent, "network", network)
	if err := s.SetRunning(sb); err != nil {
		_ = sb.Stop()
		return err
	}
	return nil
}

// sandboxSpec is what the session's sandbox is, for a start or a restore.
func (d *Daemon) sandboxSpec(s *session, rec *store.Record) *isolation.Spec {
	dir := d.paths.session(rec.ID)
	return &isolation.Spec{
		ID:            rec.ID,
		Workspace:     volume.Workspace(dir),
		Tmp:           volume.Tmp(dir),
		Limits:        limitsOf(rec.Limits),
		Env:           rec.Env,
		IDBase:        rec.IDBase,
		Runtime:       runtimeOf(rec.Runtime),
		Gateway:       d.gateway.Dir(rec.ID, rec.MCPServers),
		OnUndelivered: func(r *isolation.ExecResult) { d.execs.Undelivered(s, r) },
	}
}

// limitsOf is the runtime side of a session's limits.
func limitsOf(l store.Limits) isolation.Limits {
	return isolation.Limits{MemoryBytes: l.MemoryMB << 20, CPUs: l.CPUs, Pids: l.Pids}
}

// assignIDs gives a session its block of user-namespace ids, if sandboxes
// get user namespaces and it has none yet (it is new, or older than the
// setting). The block stays the session's until it is deleted, so its files
// keep their owner across stops and restarts.
func (d *Daemon) assignIDs(s *session) error {
	if d.ids == nil {
		return nil
	}
	var err error
	s.Update(func(r *store.Record) {
		if r.IDBase != 0 {
			return
		}
		r.IDBase, err = d.ids.Allocate()
	})
	return err
}

// releaseIDs gives a deleted session's id block back.
func (d *Daemon) releaseIDs(s *session) {
	var base uint32
	s.Update(func(r *store.Record) { base, r.IDBase = r.IDBase, 0 })
	if d.ids != nil && base != 0 {
		d.ids.Release(base)
	}
}

// watch notices at once when a session's sandbox dies on its own (its
// agent was killed, the host ran out of memory): the session fails, with
// how the sandbox ended as the reason.
func (d *Daemon) watch(s *session, sb Sandbox) {
	if sb == nil {
		return
	}
	<-sb.Exited()
	reason := sb.Exit().String()
	if !s.SetExited(sb, reason) {
		return // stopped or replaced on purpose
	}
	_ = sb.Stop()
	ctx := d.daemonCtx()
	if sb.Exit().OOM {
		d.publish(s, api.ActionOOM, reason)
	}
	if err := d.commit(ctx, s, api.ActionFailed, reason); err != nil {
		d.log.Error("record failed session", "session", s.ID(), "err", err)
	}
}
