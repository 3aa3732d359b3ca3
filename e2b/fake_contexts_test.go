package e2b

import (
	"context"
	"fmt"

	"github.com/containerd/errdefs"

	"github.com/sandboxd/sandboxd/api"
)

// The fake daemon's code contexts: made, listed, restarted (counted) and
// deleted by session, as the daemon's Contexts answer.

func (f *fakeDaemon) CreateContext(_ context.Context, id string, req api.CreateContextRequest) (*api.CodeContext, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, err := f.get(id); err != nil {
		return nil, err
	}
	if f.contexts == nil {
		f.contexts = map[string][]api.CodeContext{}
	}
	cwd := req.Cwd
	if cwd == "" {
		cwd = "/workspace"
	}
	f.n++
	c := api.CodeContext{ID: fmt.Sprintf("c%d", f.n), Language: req.Language, Cwd: cwd}
	f.contexts[id] = append(f.contexts[id], c)
	return &c, nil
}

func (f *fakeDaemon) Contexts(_ context.Context, id string) ([]api.CodeContext, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, err := f.get(id); err != nil {
		return nil, err
	}
	return append([]api.CodeContext{{ID: api.ContextDefault, Language: api.LanguagePython, Cwd: "/workspace"}}, f.contexts[id]...), nil
}

func (f *fakeDaemon) DeleteContext(_ context.Context, id, cid string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, c := range f.contexts[id] {
		if c.ID == cid {
			f.contexts[id] = append(f.contexts[id][:i], f.contexts[id][i+1:]...)
			return nil
		}
	}
	return errdefs.ErrNotFound.WithMessage("no context " + cid)
}

func (f *fakeDaemon) RestartContext(_ context.Context, id, cid string) (*api.CodeContext, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.restarted = append(f.restarted, cid)
	return &api.CodeContext{ID: cid}, nil
}
