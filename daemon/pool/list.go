package pool

import (
	"cmp"
	"context"
	"slices"
	"strings"

	"github.com/sandboxd/sandboxd/api"
)

// Templates lists the templates the caller may use, by name, then owner.
func (ts *Templates) Templates(ctx context.Context) ([]api.Template, error) {
	c := ts.o.Caller(ctx)
	ts.mu.Lock()
	defer ts.mu.Unlock()
	out := make([]api.Template, 0, len(ts.byName))
	for _, t := range ts.byName {
		if !t.adding && c.MayUseTemplate(t.def.OwnerUID) {
			out = append(out, t.view())
		}
	}
	slices.SortFunc(out, func(a, b api.Template) int {
		return cmp.Or(strings.Compare(a.Name, b.Name), cmp.Compare(a.OwnerUID, b.OwnerUID))
	})
	return out, nil
}

// Template describes the template the caller names (see lookup).
func (ts *Templates) Template(ctx context.Context, name string) (*api.Template, error) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	t := ts.lookup(ts.o.Caller(ctx), name)
	if t == nil || t.adding {
		return nil, errNoTemplate(name)
	}
	out := t.view()
	return &out, nil
}
