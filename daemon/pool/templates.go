package pool

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/containerd/errdefs"

	"github.com/sandboxd/sandboxd/api"
)

// Templates are the templates the daemon knows, by reference (byName is
// keyed by Template.Ref: names are unique per owner), with their warm
// pools. mu guards the map and every template's pool, adding and lastErr;
// ops serialises adding, importing and removing templates (slow: they
// start a sandbox or unpack a tarball) without holding mu.
type Templates struct {
	o      Options
	mu     sync.Mutex
	byName map[string]*Template
	ops    sync.Mutex
	// fillSlot holds the refills of every warm pool under way: one a core
	// (refillSlots).
	fillSlot chan struct{}
}

// New loads the built-in template and every template added before. A
// template whose root filesystem cannot be opened is kept, and says why
// when used. Its pools start with StartPools.
func New(o Options) (*Templates, error) {
	if o.RetryMin == 0 {
		o.RetryMin = RetryMin
	}
	if o.RetryMax == 0 {
		o.RetryMax = RetryMax
	}
	ts := &Templates{o: o, byName: map[string]*Template{}, fillSlot: make(chan struct{}, refillSlots())}
	if err := ts.load(); err != nil {
		return nil, err
	}
	return ts, nil
}

// newTemplate is a template of def, with the limits and runtime its
// sessions get.
func (ts *Templates) newTemplate(def api.Template) *Template {
	t := &Template{def: def, limits: ts.o.Host.Limits(def.Limits), runtime: def.Runtime}
	if t.runtime == "" {
		t.runtime = ts.o.Config.DefaultRuntime
	}
	return t
}

// packagesDir is the host folder of the packages of the template whose
// folder is folder (see templateFolder).
func (ts *Templates) packagesDir(folder string) string { return filepath.Join(ts.o.Packages, folder) }

// lookup finds the template a caller names, nil if none it may use; the
// caller holds ts.mu. A bare name is the caller's own template of that
// name, else root's (root's are everyone's; root naming one gets its
// own, never a member's); another owner's only by its explicit "uid/name",
// and only for a caller who may use it (Caller.MayUseTemplate: root, or
// the owner). The daemon itself names templates by reference.
func (ts *Templates) lookup(c Caller, name string) *Template {
	if owner, n, ok, bad := parseTemplateRef(name); ok {
		t := ts.byName[api.TemplateRef(owner, n)]
		if bad || t == nil || !c.MayUseTemplate(owner) {
			return nil
		}
		return t
	}
	if c.Known() && !c.IsRoot() {
		if t := ts.byName[api.TemplateRef(c.UID(), name)]; t != nil {
			return t
		}
	}
	if t := ts.byName[api.TemplateRef(0, name)]; t != nil && c.MayUseTemplate(t.def.OwnerUID) {
		return t
	}
	return nil
}

// ForUse finds a template the caller of ctx may use for a new session.
func (ts *Templates) ForUse(ctx context.Context, name string) (*Template, error) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return usable(ts.lookup(ts.o.Caller(ctx), name), name, false)
}

// ForStart finds the template a sandbox starts from (of a session that
// exists already, of a pool or of a trial), by the reference its record
// keeps: the daemon's own lookup, which every template passes.
func (ts *Templates) ForStart(ref string) (*Template, error) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return usable(ts.byName[ref], ref, true)
}

// usable is t, found by name, if a sandbox can start from it: one being
// added only for its trial (forStart).
func usable(t *Template, name string, forStart bool) (*Template, error) {
	if t == nil || (t.adding && !forStart) {
		return nil, errNoTemplate(name)
	}
	if t.broken != "" {
		return nil, api.Errorf(errdefs.ErrConflict, "template %s cannot start: %s; remove it and add it again", name, t.broken)
	}
	return t, nil
}

// PoolOf is t's warm pool, nil if none.
func (ts *Templates) PoolOf(t *Template) *Pool {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return t.pool
}

// setPoolError records why the template's pool last failed to start a
// sandbox (nil: it started one).
func (ts *Templates) setPoolError(t *Template, err error) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if err == nil {
		t.lastErr = ""
	} else {
		t.lastErr = fmt.Sprintf("the warm pool cannot start a sandbox: %v", err)
	}
}

// othersPoolSize is what the pools of every template but t keep at least.
func (ts *Templates) othersPoolSize(t *Template) int {
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

// load registers the python template and every template added before.
func (ts *Templates) load() error {
	ts.byName[DefaultTemplate] = ts.newTemplate(builtinTemplate(ts.o.Config))
	defs, err := ts.o.Store.Templates()
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
		t := ts.newTemplate(templateDef(def))
		if def.Rootfs != api.RootfsHost {
			if t.image, err = ts.o.Host.OpenImage(t.folder(), def.Rootfs); err != nil {
				t.broken = err.Error()
			}
		}
		if len(def.Packages) > 0 {
			t.packages = ts.packagesDir(t.folder())
			if !rootNames[def.Name] {
				ts.adoptPackages(t)
			}
			if _, err := os.Stat(t.packages); err != nil && t.broken == "" {
				t.broken = fmt.Sprintf("its packages are gone (%v)", err)
			}
		}
		if t.broken != "" {
			ts.o.Log.Warn("template cannot start", "template", t.Ref(), "err", t.broken)
		}
		ts.byName[t.Ref()] = t
	}
	return nil
}

// adoptPackages moves the packages of a user's template from the folder
// of its bare name, where a daemon of global template names kept them, to
// its own (templateFolder). Only when no template of root's has that
// name: in those days the name was this template's alone.
func (ts *Templates) adoptPackages(t *Template) {
	old := ts.packagesDir(t.def.Name)
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
		ts.o.Log.Warn("move a template's packages to its owner's folder", "template", t.Ref(), "err", err)
	}
}
