package daemon

import (
	"cmp"
	"context"

	"maps"
	"slices"
	"time"

	"github.com/containerd/errdefs"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/daemon/pool"
	"github.com/sandboxd/sandboxd/internal/logging"
	"github.com/sandboxd/sandboxd/isolation"
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
	var (
		rec  *store.Record
		t    *pool.Template
		snap *store.Snapshot
		err  error
	)
	if req.Snapshot != "" {
		rec, t, snap, err = d.State().Snapshots.fromSnapshot(ctx, req)
	} else {
		rec, t, err = d.checkCreate(ctx, req)
	}
	if err != nil {
		return nil, err
	}
	if len(req.Volumes) > 0 && !persist {
		return nil, api.Errorf(errdefs.ErrInvalidArgument, "volumes are mounted by sessions: create one (POST /v1/sessions)")
	}
	if req.Count > 1 {
		return nil, api.Errorf(errdefs.ErrInvalidArgument, "count %d: several sessions are made from a snapshot (POST /v1/sessions with snapshot and count)", req.Count)
	}
	var mounted func()
	if rec.Volumes, mounted, err = d.State().Volumes.mounts(ctx, req.Volumes, d.tmpl.UserOf(rec.Template)); err != nil {
		return nil, err
	}
	defer mounted() // the session's record holds them from its add on
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
	// A pooled sandbox was started without the session's volumes, or a
	// snapshot's files.
	if p := d.tmpl.PoolOf(t); p != nil && len(rec.Volumes) == 0 && snap == nil {
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
			_ = d.launch.destroy(s)
			return nil, err
		}
		clock.Lap("claim")
	} else {
		source = "cold"
		s = newSession(rec)
		if snap != nil {
			source = "snapshot"
			if err := d.State().Snapshots.seed(ctx, s, snap); err != nil {
				_ = d.launch.destroy(s)
				return nil, err
			}
		}
		if err := d.launch.start(ctx, s, false); err != nil {
			d.metrics.CreateFailed()
			_ = d.launch.destroy(s)
			return nil, err
		}
		clock.Lap("start")
	}
	d.metrics.Created(source == "pool", time.Since(started))
	if !persist {
		clock.Observe(source)
		go d.journal.watch(s, s.Sandbox())
		return s, nil
	}
	// The record is durable before the answer: a crash after it finds the
	// session, one before it an orphan sandbox that reconcile removes.
	// The session's record, not rec: starting it gave it its id block
	// and network slot. AddSession: one disk sync (the store's session
	// log), where a put is a database commit's two.
	final := s.Snapshot()
	if err := d.store.AddSession(&final); err != nil {
		_ = d.launch.destroy(s)
		return nil, recordErr(rec.ID, err)
	}
	clock.Lap("record")
	clock.Observe(source)
	d.sessions.add(s)
	go d.journal.watch(s, s.Sandbox())
	d.journal.publish(s, api.ActionCreated, "")
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
	if err := d.gateway.CheckGrant(req.MCPServers); err != nil {
		return nil, nil, err
	}
	if req.Checkpoints < 0 || req.Checkpoints > maxCheckpoints {
		return nil, nil, api.Errorf(errdefs.ErrInvalidArgument, "checkpoints %d: a session keeps 0 to %d", req.Checkpoints, maxCheckpoints)
	}
	deadline, err := checkOwnSettings(d.clock.Now(), req)
	if err != nil {
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
		Labels:      req.Labels,
		Env:         envList(env),
		Runtime:     runtime,
		MCPServers:  slices.Clone(req.MCPServers),
		IdleAction:  cmp.Or(req.IdleAction, d.cfg.IdleAction),
		Deadline:    deadline,
		Checkpoints: req.Checkpoints,
	}, t, nil
}

// checkOwnSettings checks what a create gives a session of its own, a
// session made from a snapshot too (env, labels, idle action, name), and
// answers its deadline from now (zero: none).
func checkOwnSettings(now time.Time, req *api.CreateSessionRequest) (deadline time.Time, err error) {
	if err := checkEnv(req.Env); err != nil {
		return deadline, err
	}
	if err := api.CheckLabels(req.Labels); err != nil {
		return deadline, err
	}
	if err := checkIdleAction(req.IdleAction); err != nil {
		return deadline, err
	}
	if err := checkName(req.Name); err != nil {
		return deadline, err
	}
	if req.DeadlineS != nil {
		if err := checkDeadlineS(*req.DeadlineS, false); err != nil {
			return deadline, err
		}
		deadline = deadlineAt(now, *req.DeadlineS)
	}
	return deadline, nil
}

// limitsOf is the runtime side of a session's limits.
func limitsOf(l store.Limits) isolation.Limits {
	return isolation.Limits{MemoryBytes: l.MemoryMB << 20, CPUs: l.CPUs, Pids: l.Pids}
}
