package daemon

import (
	"context"
	"path"
	"strings"
	"time"

	"github.com/containerd/errdefs"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/daemon/pool"
	"github.com/sandboxd/sandboxd/isolation"
	"github.com/sandboxd/sandboxd/isolation/netpolicy"
	"github.com/sandboxd/sandboxd/store"
)

// What the templates and their warm pools (package daemon/pool) need of
// the daemon, in one place: starting and destroying their sandboxes,
// their network, their disks, the daemon's rules for a definition, and
// the metrics. The pool holds no *Daemon.

// poolRetryMin and poolRetryMax bound the wait of a pool whose refills
// fail (pool.RetryMin, RetryMax); a test shortens them before it starts
// its daemon.
var (
	poolRetryMin = pool.RetryMin
	poolRetryMax = pool.RetryMax
)

// Templates is the owner of the templates and their warm pools, which
// serves the API's templates (server.TemplateBackend).
func (d *Daemon) Templates() *pool.Templates { return d.tmpl }

// poolOptions are what the daemon gives its templates' owner.
func poolOptions(d *Daemon) pool.Options {
	h := poolHost{d}
	return pool.Options{
		Config: &d.cfg, Store: d.store, Log: d.log, Clock: d.clock, Context: d.own,
		Sandboxes: h, Host: h, Metrics: h,
		Caller:  func(ctx context.Context) pool.Caller { return templateCaller{callerFrom(ctx)} },
		Imports: d.paths.imports(), Packages: d.paths.packages(),
		RetryMin: poolRetryMin, RetryMax: poolRetryMax,
	}
}

// poolHost is the daemon as its pools and templates see it
// (pool.Sandboxes, pool.Host, pool.Metrics).
type poolHost struct{ d *Daemon }

// pooledSandbox is a session of a pool or a trial, with no record yet:
// its sandbox as pool.Sandbox.
type pooledSandbox struct {
	d  *Daemon
	s  *session
	sb Sandbox
}

// sessionOf is the session of a sandbox the pool handed out.
func sessionOf(sb pool.Sandbox) *session { return sb.(*pooledSandbox).s }

// Start starts a session of template t that is never recorded as such:
// a pool's (warm), which a claim makes a session's, or a trial, which the
// daemon starts to try or build the template, then destroys.
func (h poolHost) Start(ctx context.Context, t *pool.Template, warm bool) (pool.Sandbox, error) {
	at := now()
	rec := &store.Record{
		ID: newID(), Template: t.Ref(),
		CreatedAt: at, Limits: storeLimits(t.Limits()), Network: api.NetworkNone,
		Env: envList(t.Def().Env), Runtime: t.Runtime(),
	}
	if warm {
		rec.LastUsedAt = at
	}
	s := newSession(rec)
	if err := h.d.launch.start(ctx, s, warm); err != nil {
		_ = h.d.launch.destroy(s)
		return nil, err
	}
	return &pooledSandbox{d: h.d, s: s, sb: s.Sandbox()}, nil
}

func (h poolHost) Destroy(sb pool.Sandbox) error { return h.d.launch.destroy(sessionOf(sb)) }

// LinkAhead gives a pooled sandbox its link, closed to everything, when
// the daemon gives networks and its runtime can join one.
func (h poolHost) LinkAhead(ctx context.Context, sb pool.Sandbox) error {
	s := sessionOf(sb)
	rec := s.Snapshot()
	if h.d.net.owner == nil || !h.d.runtimes.info(rec.Runtime).Networks || rec.NetSlot != 0 {
		return nil
	}
	return h.d.net.apply(ctx, s, s.Sandbox(), &netpolicy.Policy{Mode: netpolicy.ModeNone})
}

// Hand makes a claimed sandbox the session of rec: its record, but for
// what the pooled sandbox already is (its id, id block and network slot;
// its state stays the session's own), and its network.
func (h poolHost) Hand(ctx context.Context, sb pool.Sandbox, rec *store.Record) error {
	p := sb.(*pooledSandbox)
	p.s.Update(func(r *store.Record) {
		rec.ID, rec.IDBase, rec.NetSlot = r.ID, r.IDBase, r.NetSlot
		*r = *rec
	})
	// A pooled sandbox's link waits closed: the session's policy opens
	// it, or for network "none" it goes (after the answer: until then it
	// lets nothing through), but a runsc sandbox's, which it could not
	// have again (linkAtStart).
	if rec.Network == api.NetworkNone {
		if !h.d.net.linkAtStart(rec.Runtime) {
			h.removeLater(p.s.ID(), h.d.net.drop(p.s))
		}
		return nil
	}
	return h.d.net.ensure(ctx, p.s, p.sb)
}

// removeLater removes a claimed pooled sandbox's link in the background,
// off the claim's path (closed to everything meanwhile).
func (h poolHost) removeLater(id string, remove func(context.Context) error) {
	if remove == nil {
		return
	}
	h.d.background.Add(1)
	go func() {
		defer h.d.background.Done()
		if err := remove(h.d.own); err != nil {
			h.d.log.Warn("remove a claimed pooled sandbox's link", "session", id, "err", err)
		}
	}()
}

func (h poolHost) Creating() bool    { return h.d.inCreate.Load() > 0 }
func (h poolHost) DiskFreed() uint64 { return h.d.disk.Freed() }
func (h poolHost) Closed() bool      { return h.d.sessions.isClosed() }

func (h poolHost) Limits(o *api.LimitDefaults) api.Limits { return overlay(h.d.cfg.Defaults.API(), o) }

// CheckDef checks a template's runtime, environment, limits and
// packages.
func (h poolHost) CheckDef(def *api.Template) error {
	d := h.d
	if def.Runtime != "" {
		if _, err := d.runtimes.check(def.Runtime); err != nil {
			return err
		}
	}
	if err := checkEnv(def.Env); err != nil {
		return err
	}
	if _, err := resolveLimits(&d.cfg, d.cfg.Defaults.API(), def.Limits); err != nil {
		return api.Errorf(errdefs.ErrInvalidArgument, "template limits: %v", err)
	}
	// Its packages: requirements pip takes, an index, and a daemon that
	// can reach it.
	if len(def.Packages) == 0 {
		if def.IndexURL != "" {
			return errdefs.ErrInvalidArgument.WithMessage("index_url without packages: name the packages to install from it")
		}
		return nil
	}
	if _, err := checkPackages(&d.cfg, def.Packages, def.IndexURL); err != nil {
		return err
	}
	if d.net.owner == nil {
		return api.Errorf(errdefs.ErrUnavailable, "a template's packages need a network to install them, which this daemon cannot give: %s", d.net.off)
	}
	return nil
}

func (h poolHost) OpenImage(folder, rootfs string) (*isolation.Image, error) {
	return h.d.rt.OpenImage(folder, rootfs)
}

func (h poolHost) RemoveImage(folder string) error { return h.d.rt.RemoveImage(folder) }

// Users counts the sessions of template ref.
func (h poolHost) Users(ref string) int {
	n := 0
	for _, s := range h.d.sessions.all() {
		if s.Snapshot().Template == ref {
			n++
		}
	}
	return n
}

// Packages installs template t's packages in sb with pip, its network
// opened to the index alone for it, and stops sb.
func (h poolHost) Packages(ctx context.Context, sb pool.Sandbox, t *pool.Template, build string) (workspace, index string, err error) {
	d, s, def := h.d, sessionOf(sb), t.Def()
	// Checked with the template (CheckDef).
	u, err := packageIndex(&d.cfg, def.IndexURL)
	if err != nil {
		return "", "", err
	}
	closeIndex, err := d.net.openIndex(ctx, s, u, &d.cfg)
	if err != nil {
		return "", "", err
	}
	e, err := d.exec(ctx, s, pipRequest(&d.cfg, u, def.Packages, path.Join("/workspace", build)), nil)
	closeIndex()
	if err != nil {
		return "", "", err
	}
	if e.Status != api.StatusOK {
		return "", "", api.Errorf(errdefs.ErrInvalidArgument, "template %s: installing its packages failed (%s, exit code %d):\n%s", t.Ref(), e.Status, e.ExitCode, outputTail(e.Stdout+e.Stderr, 2000))
	}
	// Stopped: nothing changes the folder while it is copied.
	if sb := s.TakeSandbox(); sb != nil {
		if err := sb.Stop(); err != nil {
			return "", "", err
		}
	}
	return d.paths.workspace(s.ID()), u.String(), nil
}

// outputTail is the end of an install's output, for an error message.
func outputTail(out string, n int) string {
	out = strings.TrimSpace(out)
	if len(out) > n {
		out = "…" + out[len(out)-n:]
	}
	return out
}

func (h poolHost) Refilled(label string, started time.Time) { h.d.metrics.Refilled(label, started) }
func (h poolHost) Died(label string)                        { h.d.metrics.PoolDied(label) }
func (h poolHost) Forget(ref string)                        { h.d.metrics.ForgetTemplate(ref) }

func (p *pooledSandbox) ID() string              { return p.s.ID() }
func (p *pooledSandbox) Exited() <-chan struct{} { return p.sb.Exited() }
func (p *pooledSandbox) Exit() string            { return p.sb.Exit().String() }
func (p *pooledSandbox) Alive() bool             { return p.sb.Alive() }

// Check asks the sandbox's agent whether it answers, then its disk.
func (p *pooledSandbox) Check(ctx context.Context) error {
	sb := p.s.Sandbox()
	if sb == nil {
		return nil
	}
	if err := sb.Check(ctx); err != nil {
		return err
	}
	return p.Writable()
}

// Writable checks that its disk takes writes: an ext4 image that met an
// error (the host's disk full under it) is remounted read-only.
func (p *pooledSandbox) Writable() error { return p.d.disk.Writable(p.s.ID()) }

func (p *pooledSandbox) SetLimits(l store.Limits) error { return p.sb.SetLimits(limitsOf(l)) }

// templateCaller is a caller as package pool asks it: the rules are
// authz.go's.
type templateCaller struct{ c caller }

func (t templateCaller) Known() bool                      { return t.c.Known() }
func (t templateCaller) IsRoot() bool                     { return t.c.IsRoot() }
func (t templateCaller) UID() uint32                      { return t.c.UID }
func (t templateCaller) MayUse(owner uint32) bool         { return t.c.mayUse(owner) }
func (t templateCaller) MayUseTemplate(owner uint32) bool { return t.c.mayUseTemplate(owner) }
func (t templateCaller) HasPoolShare() bool               { return t.c.hasPoolShare() }
func (t templateCaller) InPoolShare(owner uint32) bool    { return t.c.inPoolShare(owner) }
func (t templateCaller) RequireRoot(what string) error    { return t.c.requireRoot(what) }
func (t templateCaller) RequireKnown() error              { return t.c.requireKnown() }
