package pool

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/containerd/errdefs"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/isolation"
)

// AddTemplate checks a template, starts one sandbox of it to prove it
// starts (its preload code included), records it and fills its pool.
func (ts *Templates) AddTemplate(ctx context.Context, req *api.Template) (*api.Template, error) {
	ts.ops.Lock()
	defer ts.ops.Unlock()
	caller := ts.o.Caller(ctx)
	if err := caller.RequireKnown(); err != nil {
		return nil, err
	}
	def, err := ts.checkTemplate(caller, req)
	if err != nil {
		return nil, err
	}
	t := ts.newTemplate(*def)
	t.adding = true
	if def.Rootfs != api.RootfsHost {
		if t.image, err = ts.o.Host.OpenImage(t.folder(), def.Rootfs); err != nil {
			return nil, api.Errorf(errdefs.ErrInvalidArgument, "template %s: %v", def.Name, err)
		}
	}
	if ts.o.Sandboxes.Closed() {
		return nil, errdefs.ErrUnavailable.WithMessage("sandboxd is shutting down")
	}
	ts.mu.Lock()
	ts.byName[t.Ref()] = t
	ts.mu.Unlock()
	forget := func() {
		ts.mu.Lock()
		delete(ts.byName, t.Ref())
		ts.mu.Unlock()
		_ = ts.o.Host.RemoveImage(t.folder())
		_ = ts.removePackages(t)
	}
	if len(def.Packages) > 0 {
		if err := ts.buildPackages(ctx, t); err != nil {
			forget()
			return nil, err
		}
	}
	if err := ts.tryTemplate(ctx, t); err != nil {
		forget()
		return nil, err
	}
	if err := ts.o.Store.PutTemplate(templateRecord(def)); err != nil {
		forget()
		return nil, err
	}
	ts.mu.Lock()
	t.adding = false
	if t.poolSize() > 0 && !ts.o.Sandboxes.Closed() {
		t.pool = newPool(ts, t)
	}
	out := t.view()
	ts.mu.Unlock()
	ts.o.Log.Info("template added", "template", t.Ref(), "rootfs", def.Rootfs, "owner", caller.UID())
	return &out, nil
}

// checkTemplate turns a request into a template definition, or says what
// is wrong with it.
func (ts *Templates) checkTemplate(caller Caller, req *api.Template) (*api.Template, error) {
	if err := checkTemplateName(req.Name); err != nil {
		return nil, err
	}
	if req.Name == DefaultTemplate {
		return nil, api.Errorf(errdefs.ErrConflict, "template %s exists: it is built in, choose another name", DefaultTemplate)
	}
	ts.mu.Lock()
	// Names are unique per owner: only the caller's own template of the
	// name is in the way (another's must not show here).
	_, exists := ts.byName[api.TemplateRef(caller.UID(), req.Name)]
	total, mine := 0, 0
	for _, t := range ts.byName {
		total += t.poolSize()
		if caller.InPoolShare(t.def.OwnerUID) {
			mine += t.poolSize()
		}
	}
	ts.mu.Unlock()
	if exists {
		return nil, api.Errorf(errdefs.ErrConflict, "template %s exists: remove it first to replace it", req.Name)
	}
	def := &api.Template{
		Name: req.Name, Description: req.Description, Rootfs: req.Rootfs,
		Env: req.Env, Preload: req.Preload, Limits: req.Limits, PoolSize: req.PoolSize,
		Packages: req.Packages, IndexURL: req.IndexURL, Runtime: req.Runtime,
		OwnerUID: caller.UID(), CreatedAt: time.Now().UTC(),
	}
	u, err := checkUser(req.User)
	if err != nil {
		return nil, err
	}
	def.User = u
	if def.Rootfs == "" {
		def.Rootfs = api.RootfsHost
	}
	if def.Rootfs != api.RootfsHost {
		if err := caller.RequireRoot(fmt.Sprintf("make a template of a folder: use rootfs %q, or ask the operator to import the root filesystem", api.RootfsHost)); err != nil {
			return nil, err
		}
		if err := ts.checkRootfs(def.Rootfs); err != nil {
			return nil, err
		}
	}
	if len(def.Preload) > maxPreloadBytes || strings.ContainsRune(def.Preload, 0) {
		return nil, api.Errorf(errdefs.ErrInvalidArgument, "preload must be at most %d bytes of text", maxPreloadBytes)
	}
	// The daemon's rules: its runtimes, environment, limits and
	// packages.
	if err := ts.o.Host.CheckDef(def); err != nil {
		return nil, err
	}
	if n := def.PoolSize; n != nil {
		if *n < 0 {
			return nil, api.Errorf(errdefs.ErrInvalidArgument, "pool_size is %d: it must be 0 or more", *n)
		}
		if err := ts.checkPoolRoom(caller, *n, total, mine); err != nil {
			return nil, err
		}
	}
	return def, nil
}

// checkPoolRoom refuses a new pool of n sandboxes that would take the
// caller's templates' pools past the caller's share (pool_share_per_uid),
// or all pools past pool_max_total: total is what every pool keeps now,
// mine what the pools of the caller's own templates keep (see
// Caller.InPoolShare). A pool of 0 takes no slot. n is compared with the
// room left, never added, so no pool_size, however large, overflows.
func (ts *Templates) checkPoolRoom(c Caller, n, total, mine int) error {
	cfg := ts.o.Config
	if n == 0 {
		return nil
	}
	if share := cfg.PoolShare(); c.HasPoolShare() && n > share-mine {
		// The advice fits both bounds: a pool_size it names is accepted.
		fix := fmt.Sprintf("ask for a pool_size of at most %d", min(share-mine, cfg.PoolMaxTotal-total))
		switch {
		case share-mine <= 0:
			fix = "the share is used up: add it without a pool_size, or remove a pooled template of yours first"
		case cfg.PoolMaxTotal-total <= 0:
			fix = "the host's pool_max_total is used up too: add it without a pool_size"
		}
		return api.Errorf(errdefs.ErrResourceExhausted, "uid %d's templates keep %d warm sandboxes; a pool_size of %d would take them over pool_share_per_uid (%d, each user's share of pool_max_total %d): %s, or ask the operator to raise pool_share_per_uid", c.UID(), mine, n, share, cfg.PoolMaxTotal, fix)
	}
	if n > cfg.PoolMaxTotal-total {
		return api.Errorf(errdefs.ErrResourceExhausted, "the warm pools keep %d sandboxes; a pool_size of %d would take them over pool_max_total (%d): ask for a smaller pool_size", total, n, cfg.PoolMaxTotal)
	}
	return nil
}

// checkRootfs refuses a root filesystem folder that someone but root could
// change, or that would show sandboxes the daemon's own state.
func (ts *Templates) checkRootfs(dir string) error {
	if !filepath.IsAbs(dir) || filepath.Clean(dir) != dir {
		return api.Errorf(errdefs.ErrInvalidArgument, "rootfs %s must be %q or a clean absolute path", api.Quote(dir), api.RootfsHost)
	}
	if dir == "/" {
		return api.Errorf(errdefs.ErrInvalidArgument, "rootfs / would show sandboxes the whole host: use %q for the host's system folders", api.RootfsHost)
	}
	imports := ts.o.Imports
	for _, own := range []string{ts.o.Config.DataDir, ts.o.Config.RunDir} {
		if within(own, dir) && !within(imports, dir) || within(dir, own) {
			return api.Errorf(errdefs.ErrInvalidArgument, "rootfs %s overlaps sandboxd's state folder %s", dir, own)
		}
	}
	for p := dir; ; p = filepath.Dir(p) {
		fi, err := os.Lstat(p)
		if err != nil {
			return api.Errorf(errdefs.ErrInvalidArgument, "rootfs: %v", err)
		}
		if p == dir && !fi.IsDir() {
			return api.Errorf(errdefs.ErrInvalidArgument, "rootfs %s is not a folder", dir)
		}
		if owner, ok := ownerOf(fi); fi.Mode()&os.ModeSymlink == 0 && (!ok || owner != 0 || fi.Mode().Perm()&0o022 != 0 && fi.Mode()&os.ModeSticky == 0) {
			return api.Errorf(errdefs.ErrInvalidArgument, "rootfs: %s must belong to root and be writable by root alone", p)
		}
		if p == "/" {
			return nil
		}
	}
}

// ownerOf is the uid owning a file, if the system says.
func ownerOf(fi os.FileInfo) (uint32, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return st.Uid, true
}

// within reports whether path is dir or inside it.
func within(dir, path string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}

// tryTemplate starts one sandbox of a template being added, and removes it:
// a template that cannot start is refused with the reason.
func (ts *Templates) tryTemplate(ctx context.Context, t *Template) error {
	s, err := ts.o.Sandboxes.Start(ctx, t, false)
	if err == nil {
		if derr := ts.o.Sandboxes.Destroy(s); derr != nil {
			ts.o.Log.Warn("remove a template's trial sandbox", "template", t.def.Name, "err", derr)
		}
	}
	if err != nil {
		var pe *isolation.PreloadError
		if errors.As(err, &pe) {
			err = pe // the session id of a trial means nothing to the caller
		}
		return api.Errorf(errdefs.ErrInvalidArgument, "template %s cannot start: %v", t.def.Name, err)
	}
	return nil
}
