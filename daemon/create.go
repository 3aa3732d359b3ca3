package daemon

import (
	"context"
	"fmt"
	"maps"
	"time"

	"github.com/containerd/errdefs"
	"github.com/opencontainers/runtime-spec/specs-go"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/cgroups"
	"github.com/sandboxd/sandboxd/daemon/identity"
	"github.com/sandboxd/sandboxd/internal/logging"
	"github.com/sandboxd/sandboxd/isolation"
	"github.com/sandboxd/sandboxd/isolation/agent"
	"github.com/sandboxd/sandboxd/isolation/volume"
	"github.com/sandboxd/sandboxd/store"
)

// CreateSession starts a new session, ready to execute, owned by the caller.
func (d *Daemon) CreateSession(ctx context.Context, req *api.CreateSessionRequest) (*api.Session, error) {
	s, err := d.newSession(ctx, req, true)
	if err != nil {
		return nil, err
	}
	out := s.snapshot()
	return &out, nil
}

// newSession checks the request, reserves a place under the quotas, and
// starts the sandbox. A persistent session is recorded and listed, and
// counts under the quotas as a running session from then on. A one-shot
// one (POST /v1/run) is neither recorded nor listed: it keeps its
// reservation, which the caller releases when it destroys the sandbox.
func (d *Daemon) newSession(ctx context.Context, req *api.CreateSessionRequest, persist bool) (_ *session, retErr error) {
	rec, t, err := d.checkCreate(ctx, req)
	if err != nil {
		return nil, err
	}
	owner := rec.OwnerUID
	if err := d.reserve(owner); err != nil {
		return nil, err
	}
	defer func() {
		if persist || retErr != nil {
			d.release(owner)
		}
	}()

	started := time.Now()
	var s *session
	d.mu.Lock()
	p := t.pool
	d.mu.Unlock()
	if p != nil {
		s = p.claim(ctx, rec)
	}
	source := "pool"
	if s == nil {
		source = "cold"
		s = &session{rec: rec}
		if err := d.startSandbox(ctx, s, false); err != nil {
			d.metrics.creates.WithLabelValues("error").Inc()
			_ = d.destroySession(s)
			return nil, err
		}
	}
	d.metrics.creates.WithLabelValues("ok").Inc()
	if source == "pool" {
		d.metrics.poolClaims.Inc()
	}
	d.metrics.createDur.Observe(time.Since(started).Seconds())
	if !persist {
		return s, nil
	}
	if err := d.store.PutSession(rec); err != nil {
		_ = d.destroySession(s)
		return nil, err
	}
	d.mu.Lock()
	d.sessions[rec.ID] = s
	d.mu.Unlock()
	logging.From(ctx).Info("session created", "session", rec.ID, "owner", owner, "from", source, "took", time.Since(started))
	return s, nil
}

// checkCreate turns a request into a new record, or says what is wrong.
func (d *Daemon) checkCreate(ctx context.Context, req *api.CreateSessionRequest) (*store.Record, *template, error) {
	name := req.Template
	if name == "" {
		name = DefaultTemplate
	}
	d.mu.Lock()
	t, err := d.templateLocked(name, false)
	d.mu.Unlock()
	if err != nil {
		return nil, nil, err
	}
	network := req.Network
	if network == "" {
		network = api.NetworkNone
	}
	if network != api.NetworkNone {
		return nil, nil, api.Errorf(errdefs.ErrInvalidArgument, "network %q is not supported: use \"none\"", network)
	}
	limits, err := d.cfg.resolveLimits(t.limits(&d.cfg), requestLimits(req))
	if err != nil {
		return nil, nil, err
	}
	if err := checkEnv(req.Env); err != nil {
		return nil, nil, err
	}
	if err := checkLabels(req.Labels); err != nil {
		return nil, nil, err
	}
	// The template's environment, then the session's over it.
	env := maps.Clone(t.def.Env)
	if env == nil {
		env = map[string]string{}
	}
	maps.Copy(env, req.Env)
	at := now()
	return &store.Record{
		Session: api.Session{
			ID:         newID(),
			OwnerUID:   identity.From(ctx).UID,
			Template:   name,
			Status:     api.StatusRunning,
			CreatedAt:  at,
			LastUsedAt: at,
			Limits:     limits,
			Network:    network,
			Labels:     req.Labels,
		},
		Env: envList(env),
	}, t, nil
}

// reserve counts a creation against the quotas before it starts, so that
// concurrent creations cannot overshoot them.
func (d *Daemon) reserve(owner uint32) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return errdefs.ErrUnavailable.WithMessage("sandboxd is shutting down")
	}
	total, mine := 0, d.pending[owner]
	for _, n := range d.pending {
		total += n
	}
	for _, s := range d.sessions {
		s.mu.Lock()
		if s.rec.Status == api.StatusRunning {
			total++
			if s.rec.OwnerUID == owner {
				mine++
			}
		}
		s.mu.Unlock()
	}
	if total >= d.cfg.MaxSessions {
		return api.Errorf(errdefs.ErrResourceExhausted, "this host runs its maximum of %d sessions: delete or stop one first", d.cfg.MaxSessions)
	}
	if mine >= d.cfg.MaxSessionsPerUID {
		return api.Errorf(errdefs.ErrResourceExhausted, "you run your maximum of %d sessions: delete or stop one first", d.cfg.MaxSessionsPerUID)
	}
	d.pending[owner]++
	return nil
}

func (d *Daemon) release(owner uint32) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.pending[owner]--; d.pending[owner] <= 0 {
		delete(d.pending, owner)
	}
}

// startSandbox starts the session's sandbox over its (possibly existing)
// workspace; warm waits until its interpreter has fully started (for the
// pools). The caller holds no lock: starting takes tens of milliseconds.
func (d *Daemon) startSandbox(ctx context.Context, s *session, warm bool) error {
	if err := d.assignIDs(s); err != nil {
		return err
	}
	s.mu.Lock()
	rec := *s.rec
	s.mu.Unlock()
	t, err := d.templateFor(rec.Template)
	if err != nil {
		return err
	}
	t0 := time.Now()
	if err := volume.Ensure(ctx, d.cfg.DiskQuota, d.pristine, d.sessionDir(rec.ID), rec.Limits.DiskMB<<20); err != nil {
		return fmt.Errorf("session %s disk: %w", rec.ID, err)
	}
	disk := time.Since(t0)
	spec := d.sandboxSpec(s, &rec)
	spec.Image, spec.Preload, spec.Warm = t.image, t.def.Preload, warm
	sb, err := d.rt.Start(ctx, spec)
	if err != nil {
		return fmt.Errorf("start sandbox for session %s: %w", rec.ID, err)
	}
	d.log.Debug("sandbox started", "session", rec.ID, "template", rec.Template, "disk", disk,
		"prepare", sb.Timings.Prepare, "container", sb.Timings.Container, "agent", sb.Timings.Agent)
	s.mu.Lock()
	s.sb = sb
	s.rec.Status = api.StatusRunning
	s.rec.Reason = ""
	s.mu.Unlock()
	go d.watch(s, sb)
	return nil
}

// sandboxSpec is what the session's sandbox is, for a start or a restore.
func (d *Daemon) sandboxSpec(s *session, rec *store.Record) *isolation.Spec {
	dir := d.sessionDir(rec.ID)
	return &isolation.Spec{
		ID:            rec.ID,
		Workspace:     volume.Workspace(dir),
		Tmp:           volume.Tmp(dir),
		Resources:     *resourcesOf(rec.Limits),
		Env:           rec.Env,
		IDBase:        rec.IDBase,
		OnUndelivered: func(m *agent.Message) { d.recordUndelivered(s, m) },
	}
}

// resourcesOf is the cgroup side of a session's limits.
func resourcesOf(l api.Limits) *specs.LinuxResources {
	return cgroups.Resources(cgroups.Limits{MemoryBytes: l.MemoryMB << 20, CPUs: l.CPUs, Pids: l.Pids})
}

// assignIDs gives a session its block of user-namespace ids, if sandboxes
// get user namespaces and it has none yet (it is new, or older than the
// setting). The block stays the session's until it is deleted, so its files
// keep their owner across stops and restarts.
func (d *Daemon) assignIDs(s *session) error {
	if d.ids == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.rec.IDBase != 0 {
		return nil
	}
	base, err := d.ids.Allocate()
	if err != nil {
		return err
	}
	s.rec.IDBase = base
	return nil
}

// releaseIDs gives a deleted session's id block back.
func (d *Daemon) releaseIDs(s *session) {
	s.mu.Lock()
	base := s.rec.IDBase
	s.mu.Unlock()
	if d.ids != nil && base != 0 {
		d.ids.Release(base)
	}
}

// watch marks a session failed when its sandbox dies on its own (the agent
// was killed, or the host ran out of memory).
func (d *Daemon) watch(s *session, sb *isolation.Sandbox) {
	<-sb.Exited()
	s.mu.Lock()
	if s.sb != sb {
		s.mu.Unlock()
		return // stopped or replaced on purpose
	}
	s.sb = nil
	s.rec.Status = api.StatusFailed
	s.rec.Reason = "the sandbox exited unexpectedly; restart the session"
	rec := *s.rec
	s.mu.Unlock()
	_ = sb.Destroy()
	if d.isPersistent(rec.ID) {
		_ = d.store.PutSession(&rec)
	}
	d.log.Warn("sandbox exited unexpectedly", "session", rec.ID)
}

func (d *Daemon) isPersistent(id string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	_, ok := d.sessions[id]
	return ok
}
