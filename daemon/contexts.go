package daemon

import (
	"context"
	"errors"
	"slices"

	"github.com/containerd/errdefs"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/daemon/sandboxfs"
	"github.com/sandboxd/sandboxd/isolation"
	"github.com/sandboxd/sandboxd/store"
)

// A session's code contexts are interpreters of their own beside its
// first one (api.ContextDefault), each with its globals and its folder,
// in the same sandbox (the agent forks one worker a context). The daemon
// keeps their names in the session's record; the sandbox's agent keeps
// their state. So a context outlives a daemon restart with its state (the
// sandbox does), and a new sandbox (the session restarted, or its sandbox
// lost) starts a context afresh at its next execution, which says
// state_reset, as the default one's does. A shell context has no
// interpreter: it is a working folder for shell executions.

// maxContexts bounds a session's contexts beside the default one: each
// Python context is an interpreter's memory.
const maxContexts = 16

// Contexts serves the API's code contexts of sessions.
type Contexts struct{ d *Daemon }

// CreateContext makes a context in a session and, for Python, starts its
// interpreter.
func (c Contexts) CreateContext(ctx context.Context, id string, req *api.CreateContextRequest) (*api.CodeContext, error) {
	lang, cwd, err := checkContext(req)
	if err != nil {
		return nil, err
	}
	s, err := c.d.lookup(ctx, id)
	if err != nil {
		return nil, err
	}
	if cwd, err = cwdOf(c.d.tmpl, s, cwd); err != nil {
		return nil, err
	}
	from, err := sourceContext(s.Snapshot(), homeOf(c.d.tmpl, s), req)
	if err != nil {
		return nil, err
	}
	agentCwd := cwd
	if req.Cwd == "" && from.ID != "" {
		// A copy keeps its source's folder, whichever the source's code
		// went to (its state), and its record the source's.
		cwd, agentCwd = from.Cwd, ""
	}
	cx := store.Context{ID: newID()[:12], Language: lang, Cwd: cwd, CreatedAt: now()}
	if lang != api.LanguageShell {
		start := func(sb Sandbox) error { return sb.StartContext(ctx, cx.ID, agentCwd, from.ID, lang) }
		if err := c.onAgent(ctx, s, start); err != nil {
			return nil, err
		}
	}
	full := false
	s.Update(func(r *store.Record) {
		if full = len(r.Contexts) >= maxContexts; !full {
			r.Contexts = append(slices.Clip(r.Contexts), cx)
		}
	})
	if full {
		c.stopInterpreter(ctx, s, cx)
		return nil, api.Errorf(errdefs.ErrResourceExhausted, "session %s has %d contexts, the most it may have: delete one first", s.ID(), maxContexts)
	}
	if err := c.persist(s); err != nil {
		c.forget(s, cx.ID)
		c.stopInterpreter(ctx, s, cx)
		return nil, err
	}
	v := contextView(cx)
	return &v, nil
}

// Contexts lists a session's contexts, the default one first.
func (c Contexts) Contexts(ctx context.Context, id string) ([]api.CodeContext, error) {
	s, err := c.d.lookup(ctx, id)
	if err != nil {
		return nil, err
	}
	rec := s.Snapshot()
	out := []api.CodeContext{contextView(defaultContext(rec, homeOf(c.d.tmpl, s)))}
	for _, cx := range rec.Contexts {
		out = append(out, contextView(cx))
	}
	return out, nil
}

// DeleteContext stops a context's interpreter and forgets it.
func (c Contexts) DeleteContext(ctx context.Context, id, cid string) error {
	if cid == api.ContextDefault {
		return errdefs.ErrInvalidArgument.WithMessage("the default context cannot be deleted: restart it to start it afresh")
	}
	s, err := c.d.lookup(ctx, id)
	if err != nil {
		return err
	}
	cx, err := findContext(s.Snapshot(), cid)
	if err != nil {
		return err
	}
	if cx.Language != api.LanguageShell && s.Sandbox() != nil {
		if err := c.onAgent(ctx, s, func(sb Sandbox) error { return sb.DeleteContext(ctx, cx.ID) }); err != nil {
			return err
		}
	}
	c.forget(s, cx.ID)
	return c.persist(s)
}

// RestartContext starts a context's interpreter afresh: its globals are
// gone, its folder is its own again. A shell context has nothing to
// restart.
func (c Contexts) RestartContext(ctx context.Context, id, cid string) (*api.CodeContext, error) {
	s, err := c.d.lookup(ctx, id)
	if err != nil {
		return nil, err
	}
	rec := s.Snapshot()
	cx := defaultContext(rec, homeOf(c.d.tmpl, s))
	if cid != api.ContextDefault {
		if cx, err = findContext(rec, cid); err != nil {
			return nil, err
		}
	}
	if cx.Language != api.LanguageShell {
		if err := c.onAgent(ctx, s, func(sb Sandbox) error { return sb.StartContext(ctx, cx.ID, cx.Cwd, "", cx.Language) }); err != nil {
			return nil, err
		}
	}
	v := contextView(cx)
	return &v, nil
}

// onAgent runs f on the session's sandbox, claimed as an execution would
// claim it (resumed if paused; one of the host's execution slots held):
// the agent answers one request at a time.
func (c Contexts) onAgent(ctx context.Context, s *session, f func(Sandbox) error) error {
	d := c.d
	if err := d.execs.Slots.Take(); err != nil {
		return err
	}
	defer d.execs.Slots.Release()
	sb, reset, err := d.claimAwake(ctx, s)
	if err != nil {
		return err
	}
	defer s.ReleaseExec()
	if reset {
		s.SetResetUntold() // the next execution's to tell
	}
	err = f(sb)
	if errors.Is(err, isolation.ErrContextUnsupported) {
		return api.Errorf(errdefs.ErrFailedPrecondition, "session %s's sandbox was started by an older sandboxd, whose interpreter has no contexts: restart the session to use them", s.ID())
	}
	return err
}

// stopInterpreter stops a context's interpreter the record does not
// keep (a create that failed after starting it); best effort.
func (c Contexts) stopInterpreter(ctx context.Context, s *session, cx store.Context) {
	if cx.Language != api.LanguageShell {
		_ = c.onAgent(context.WithoutCancel(ctx), s, func(sb Sandbox) error { return sb.DeleteContext(ctx, cx.ID) })
	}
}

// forget removes context cid from the session's record.
func (c Contexts) forget(s *session, cid string) {
	s.Update(func(r *store.Record) {
		r.Contexts = slices.DeleteFunc(slices.Clone(r.Contexts), func(x store.Context) bool { return x.ID == cid })
	})
}

func (c Contexts) persist(s *session) error {
	rec := s.Snapshot()
	if err := c.d.store.PutSession(&rec); err != nil {
		return recordErr(rec.ID, err)
	}
	return nil
}

// checkContext checks a create's request, and says its language and folder.
func checkContext(req *api.CreateContextRequest) (lang, cwd string, err error) {
	switch req.Language {
	case "", api.LanguagePython:
		lang = api.LanguagePython
	case api.LanguageShell, api.LanguageJavaScript:
		lang = req.Language
	default:
		return "", "", api.Errorf(errdefs.ErrInvalidArgument, `a context's language %s is not supported: use "python", "javascript" or "shell"`, api.Quote(req.Language))
	}
	// A folder under /home is checked against the session's home
	// (cwdOf); "" is its home.
	cwd = req.Cwd
	if cwd != "" && !deferredCwd(cwd) {
		if cwd, err = sandboxfs.Cwd(cwd); err != nil {
			return "", "", err
		}
	}
	return lang, cwd, nil
}

// sourceContext is the context a create copies (from), the zero Context
// for none.
func sourceContext(rec store.Record, home string, req *api.CreateContextRequest) (store.Context, error) {
	switch {
	case req.From == "":
		return store.Context{}, nil
	case req.Language != "" && req.Language != api.LanguagePython:
		return store.Context{}, api.Errorf(errdefs.ErrInvalidArgument, "only a Python interpreter is copied: a %s context cannot be made from another", req.Language)
	case req.From == api.ContextDefault:
		return defaultContext(rec, home), nil
	}
	cx, err := findContext(rec, req.From)
	if err != nil {
		return cx, err
	}
	if cx.Language != api.LanguagePython {
		return cx, api.Errorf(errdefs.ErrInvalidArgument, "context %s is a %s context: only a Python interpreter is copied", cx.ID, cx.Language)
	}
	return cx, nil
}

// defaultContext is a session's first context, which starts in its home.
func defaultContext(rec store.Record, home string) store.Context {
	return store.Context{ID: api.ContextDefault, Language: api.LanguagePython, Cwd: home, CreatedAt: rec.CreatedAt}
}

// findContext is context cid of a session's record.
func findContext(rec store.Record, cid string) (store.Context, error) {
	for _, cx := range rec.Contexts {
		if cx.ID == cid {
			return cx, nil
		}
	}
	return store.Context{}, api.Errorf(errdefs.ErrNotFound, "session %s has no context %s", rec.ID, api.Quote(cid))
}

func contextView(cx store.Context) api.CodeContext {
	return api.CodeContext{ID: cx.ID, Language: cx.Language, Cwd: cx.Cwd, CreatedAt: cx.CreatedAt}
}

// execContext is the context an execution runs in (the zero Context for
// the default one), checked against its language; a shell execution
// without a cwd gets its context's.
func execContext(rec store.Record, req *api.ExecRequest) (store.Context, error) {
	if req.Context == "" || req.Context == api.ContextDefault {
		return store.Context{}, nil
	}
	cx, err := findContext(rec, req.Context)
	if err != nil {
		return cx, err
	}
	if req.Language == api.LanguageShell {
		if req.Cwd == "" {
			req.Cwd = cx.Cwd
		}
		return store.Context{}, nil // shell executions have no interpreter
	}
	if cx.Language != req.Language {
		return cx, api.Errorf(errdefs.ErrInvalidArgument, "context %s is a %s context: run %s (or shell) code in it, not %s", cx.ID, cx.Language, cx.Language, req.Language)
	}
	return cx, nil
}
