package daemon

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/containerd/errdefs"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/daemon/config"
	"github.com/sandboxd/sandboxd/internal/identity"
	"github.com/sandboxd/sandboxd/isolation"
)

// DefaultTemplate is the template every host has.
const DefaultTemplate = "python"

// maxPreloadBytes bounds a template's preload code (it travels as an
// argument of the sandbox's first process).
const maxPreloadBytes = 64 << 10

var templateName = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,62}$`)

// checkTemplateName refuses a name that could not be a template's (nor a
// folder's under the imports).
func checkTemplateName(name string) error {
	if !templateName.MatchString(name) {
		return api.Errorf(errdefs.ErrInvalidArgument, "bad template name %s: use 1 to 63 of a-z, 0-9, '.', '_' and '-', starting with a letter or digit", api.Quote(name))
	}
	return nil
}

// parseTemplateRef splits an explicit reference "uid/name" (see
// api.TemplateRef); ok is false for a bare name. A reference of no
// canonical uid, or of no good name, names nothing: bad is set.
func parseTemplateRef(s string) (owner uint32, name string, ok, bad bool) {
	u, name, ok := strings.Cut(s, "/")
	if !ok {
		return 0, s, false, false
	}
	n, err := strconv.ParseUint(u, 10, 32)
	if err != nil || strconv.FormatUint(n, 10) != u || !templateName.MatchString(name) {
		return 0, "", true, true
	}
	return uint32(n), name, true, false
}

// templateFolder is the name of a template's folders on disk (its
// packages, its prepared image) for its reference: the reference with '@'
// for its '/', so that two owners' templates of one name never share one
// (names hold neither character). Root's keep their name.
func templateFolder(ref string) string { return strings.Replace(ref, "/", "@", 1) }

// folderRef is the reference of the template a folder is for.
func folderRef(folder string) string { return strings.Replace(folder, "@", "/", 1) }

// errNoTemplate is the answer for a template the caller cannot use.
func errNoTemplate(name string) error {
	return api.Errorf(errdefs.ErrNotFound, "no such template: %s (see sandboxctl template ls)", api.Quote(name))
}

// template is one template the daemon knows: its definition as added, the
// root filesystem prepared for sandboxes, and its warm pool.
type template struct {
	def   api.Template
	image *isolation.Image // nil: the host's system folders
	pool  *pool            // nil: no pool
	// broken, if set, says why no sandbox of it can start (its root
	// filesystem could not be opened at daemon start).
	broken string
	// adding is set while the template's first sandbox is tried: it is
	// not listed or usable yet.
	adding bool
	// packages is the host folder of its packages ("": none);
	// building is set while they are installed, in a sandbox that has
	// neither them nor the preload code yet.
	packages string
	building bool
	// lastErr is why the last pooled start failed.
	lastErr string
}

// ref is the reference naming the template without doubt (see
// api.TemplateRef): its key in templates.byName, in the store, and in the
// records of its sessions.
func (t *template) ref() string { return api.TemplateRef(t.def.OwnerUID, t.def.Name) }

// metricLabel is the template's value of the metrics' template label:
// root's templates (everyone's) by name; every other user's together as
// "users", since /metrics is read by every caller and a user's template
// names are that user's to see (and each would be a series of its own).
func (t *template) metricLabel() string {
	if t.def.OwnerUID == 0 {
		return t.def.Name
	}
	return usersTemplatesLabel
}

// usersTemplatesLabel is the template label of every non-root user's
// templates in the metrics.
const usersTemplatesLabel = "users"

// folder names its folders on disk (see templateFolder).
func (t *template) folder() string { return templateFolder(t.ref()) }

// templates are the templates the daemon knows, by reference (byName is
// keyed by template.ref: names are unique per owner), with their warm
// pools. mu guards the map and every template's pool, adding and lastErr;
// ops serialises adding, importing and removing templates (slow: they
// start a sandbox or unpack a tarball) without holding mu.
type templates struct {
	mu     sync.Mutex
	byName map[string]*template
	ops    sync.Mutex
	// fillSlot holds the refills of every warm pool under way: one a core
	// (refillSlots).
	fillSlot chan struct{}
}

func newTemplates() *templates {
	return &templates{byName: map[string]*template{}, fillSlot: make(chan struct{}, refillSlots())}
}

// lookup finds the template a caller names, nil if none it may use; the
// caller holds ts.mu. A bare name is the caller's own template of that
// name, else root's (root's are everyone's; root naming one gets its
// own, never a member's); another owner's only by its explicit "uid/name",
// and only for a caller who may use it (caller.mayUseTemplate: root, or
// the owner). The daemon itself names templates by reference.
func (ts *templates) lookup(c caller, name string) *template {
	if owner, n, ok, bad := parseTemplateRef(name); ok {
		t := ts.byName[api.TemplateRef(owner, n)]
		if bad || t == nil || !c.mayUseTemplate(owner) {
			return nil
		}
		return t
	}
	if c.Known() && !c.IsRoot() {
		if t := ts.byName[api.TemplateRef(c.UID, name)]; t != nil {
			return t
		}
	}
	if t := ts.byName[api.TemplateRef(0, name)]; t != nil && c.mayUseTemplate(t.def.OwnerUID) {
		return t
	}
	return nil
}

// forUse finds a template the caller may use for a new session.
func (ts *templates) forUse(c caller, name string, forStart bool) (*template, error) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	t := ts.lookup(c, name)
	if t == nil || (t.adding && !forStart) {
		return nil, errNoTemplate(name)
	}
	if t.broken != "" {
		return nil, api.Errorf(errdefs.ErrConflict, "template %s cannot start: %s; remove it and add it again", name, t.broken)
	}
	return t, nil
}

// forStart finds the template a sandbox starts from (of a session that
// exists already, or of a pool), by the reference its record keeps.
func (ts *templates) forStart(ref string) (*template, error) {
	return ts.forUse(caller{identity.Internal()}, ref, true)
}

// poolOf is t's warm pool, nil if none.
func (ts *templates) poolOf(t *template) *pool {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return t.pool
}

// setPoolError records why the template's pool last failed to start a
// sandbox (nil: it started one).
func (ts *templates) setPoolError(t *template, err error) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if err == nil {
		t.lastErr = ""
	} else {
		t.lastErr = fmt.Sprintf("the warm pool cannot start a sandbox: %v", err)
	}
}

// limits are the limits sessions of the template get unless they ask for
// others.
func (t *template) limits(c *config.Config) api.Limits {
	return overlay(c.Defaults.API(), t.def.Limits)
}

// fill is its pool's size and how many of its sandboxes are ready. The
// caller holds templates.mu.
func (t *template) fill() api.PoolFill {
	f := api.PoolFill{Size: t.poolSize()}
	if t.pool != nil {
		f.Idle = t.pool.ready()
		f.Target = max(f.Size, int(t.pool.target.Load()))
	}
	return f
}

// othersPoolSize is what the pools of every template but t keep at least.
func (ts *templates) othersPoolSize(t *template) int {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	n := 0
	for _, o := range ts.byName {
		if o != t {
			n += o.poolSize()
		}
	}
	return n
}

// poolSize is how many sandboxes its pool keeps at least.
func (t *template) poolSize() int {
	if t.def.PoolSize == nil {
		return 0
	}
	return *t.def.PoolSize
}

// builtinTemplate is the python template: the host's Python, read-only.
func builtinTemplate(c *config.Config) *template {
	n := c.PoolSize
	return &template{def: api.Template{
		Name:        DefaultTemplate,
		Description: "the host's python3, its system folders read-only",
		Rootfs:      api.RootfsHost,
		PoolSize:    &n,
		Builtin:     true,
	}}
}

// loadTemplates registers the python template and every template added
// before. A template whose root filesystem cannot be opened is kept, and
// says why when used.
func (d *Daemon) loadTemplates() error {
	d.tmpl.byName[DefaultTemplate] = builtinTemplate(&d.cfg)
	defs, err := d.store.Templates()
	if err != nil {
		return err
	}
	rootNames := map[string]bool{}
	for _, def := range defs {
		if def.OwnerUID == 0 {
			rootNames[def.Name] = true
		}
	}
	for _, def := range defs {
		t := &template{def: templateDef(def)}
		if def.Rootfs != api.RootfsHost {
			if t.image, err = d.rt.OpenImage(t.folder(), def.Rootfs); err != nil {
				t.broken = err.Error()
			}
		}
		if len(def.Packages) > 0 {
			t.packages = d.paths.templatePackages(t.folder())
			if !rootNames[def.Name] {
				d.adoptPackages(t)
			}
			if _, err := os.Stat(t.packages); err != nil && t.broken == "" {
				t.broken = fmt.Sprintf("its packages are gone (%v)", err)
			}
		}
		if t.broken != "" {
			d.log.Warn("template cannot start", "template", t.ref(), "err", t.broken)
		}
		d.tmpl.byName[t.ref()] = t
	}
	return nil
}

// adoptPackages moves the packages of a user's template from the folder
// of its bare name, where a daemon of global template names kept them, to
// its own (templateFolder). Only when no template of root's has that
// name: in those days the name was this template's alone.
func (d *Daemon) adoptPackages(t *template) {
	old := d.paths.templatePackages(t.def.Name)
	if old == t.packages {
		return
	}
	if _, err := os.Stat(t.packages); !os.IsNotExist(err) {
		return
	}
	if _, err := os.Stat(old); err != nil {
		return
	}
	if err := os.Rename(old, t.packages); err != nil {
		d.log.Warn("move a template's packages to its owner's folder", "template", t.ref(), "err", err)
	}
}

// startPools starts the warm pool of every template that has one.
func (d *Daemon) startPools() {
	d.tmpl.mu.Lock()
	defer d.tmpl.mu.Unlock()
	for _, t := range d.tmpl.byName {
		if t.poolSize() > 0 && t.broken == "" && !t.adding {
			t.pool = newPool(d, t)
		}
	}
}

// view is the template as the API shows it: every limit set to what
// sessions get, and its pool's fill.
func (t *template) view(c *config.Config) api.Template {
	out := t.def
	out.Ref = t.ref()
	l := t.limits(c)
	out.Limits = &api.LimitDefaults{MemoryMB: &l.MemoryMB, CPUs: &l.CPUs, Pids: &l.Pids, DiskMB: &l.DiskMB, TimeoutS: &l.TimeoutS, IdleTimeoutS: &l.IdleTimeoutS}
	f := t.fill()
	out.PoolSize, out.PoolIdle = &f.Size, f.Idle
	out.Error = t.broken
	if out.Error == "" {
		out.Error = t.lastErr
	}
	return out
}

// Templates lists the templates the caller may use, by name, then owner.
func (d *Daemon) Templates(ctx context.Context) ([]api.Template, error) {
	c := callerFrom(ctx)
	d.tmpl.mu.Lock()
	defer d.tmpl.mu.Unlock()
	out := make([]api.Template, 0, len(d.tmpl.byName))
	for _, t := range d.tmpl.byName {
		if !t.adding && c.mayUseTemplate(t.def.OwnerUID) {
			out = append(out, t.view(&d.cfg))
		}
	}
	slices.SortFunc(out, func(a, b api.Template) int {
		return cmp.Or(strings.Compare(a.Name, b.Name), cmp.Compare(a.OwnerUID, b.OwnerUID))
	})
	return out, nil
}

// Template describes the template the caller names (see templates.lookup).
func (d *Daemon) Template(ctx context.Context, name string) (*api.Template, error) {
	d.tmpl.mu.Lock()
	defer d.tmpl.mu.Unlock()
	t := d.tmpl.lookup(callerFrom(ctx), name)
	if t == nil || t.adding {
		return nil, errNoTemplate(name)
	}
	out := t.view(&d.cfg)
	return &out, nil
}

// runtime is the runtime of the template's sessions that name none (its
// pool's, and its trial's): its own, else the daemon's default.
func (t *template) runtime(c *config.Config) string {
	if t.def.Runtime != "" {
		return t.def.Runtime
	}
	return c.DefaultRuntime
}

// DeleteTemplate removes a template no session uses, with its pool, and
// its root filesystem if the daemon unpacked it.
func (d *Daemon) DeleteTemplate(ctx context.Context, name string) error {
	d.tmpl.ops.Lock()
	defer d.tmpl.ops.Unlock()
	caller := callerFrom(ctx)
	d.tmpl.mu.Lock()
	t := d.tmpl.lookup(caller, name)
	if t == nil || t.adding {
		d.tmpl.mu.Unlock()
		// An import whose template was never added leaves a folder; the
		// same call removes it.
		if caller.requireRoot("remove an import") == nil && checkTemplateName(name) == nil {
			if _, err := os.Stat(d.paths.importDir(name)); err == nil {
				return os.RemoveAll(d.paths.importDir(name))
			}
		}
		return errNoTemplate(name)
	}
	if t.def.Builtin {
		d.tmpl.mu.Unlock()
		return api.Errorf(errdefs.ErrConflict, "the %s template is built in and cannot be removed: set pool_size in the config to change its pool", name)
	}
	if !caller.mayUse(t.def.OwnerUID) {
		d.tmpl.mu.Unlock()
		return api.Errorf(errdefs.ErrPermissionDenied, "template %s belongs to uid %d: only it or root may remove it", name, t.def.OwnerUID)
	}
	d.tmpl.mu.Unlock()
	ref := t.ref()
	users := 0
	for _, s := range d.sessions.all() {
		if s.Snapshot().Template == ref {
			users++
		}
	}
	if users > 0 {
		return api.Errorf(errdefs.ErrConflict, "template %s is used by %d session(s): delete them first", name, users)
	}
	d.tmpl.mu.Lock()
	delete(d.tmpl.byName, ref)
	p := t.pool
	t.pool = nil
	d.tmpl.mu.Unlock()
	if p != nil {
		p.close()
	}
	d.metrics.forgetTemplate(ref)
	if err := d.store.DeleteTemplate(t.def.OwnerUID, t.def.Name); err != nil {
		return err
	}
	_ = d.rt.RemoveImage(t.folder())
	if err := d.removePackages(t); err != nil {
		return err
	}
	// Imports are root's, by name (only root may import or make a
	// template of a folder).
	if t.def.OwnerUID == 0 && t.def.Rootfs == d.paths.importRootfs(t.def.Name) {
		if err := os.RemoveAll(d.paths.importDir(t.def.Name)); err != nil {
			return err
		}
	}
	d.log.Info("template removed", "template", ref)
	return nil
}
