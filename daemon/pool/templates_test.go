package pool

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/containerd/errdefs"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/daemon/config"
	"github.com/sandboxd/sandboxd/internal/testutil"
)

func ptr[T any](v T) *T { return &v }

// TestTemplateLifecycle: an added template is tried (one sandbox, then
// destroyed), listed, and its pool filled; a template in use is not
// removed; a removed one takes its pool's sandboxes with it.
func TestTemplateLifecycle(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t, nil)
	out, err := e.ts.AddTemplate(as(1000), &api.Template{Name: "sci", PoolSize: ptr(2)})
	if err != nil {
		t.Fatal(err)
	}
	if out.Ref != "1000/sci" || out.OwnerUID != 1000 || out.Limits == nil || *out.Limits.DiskMB != 1024 {
		t.Fatalf("added: %+v", out)
	}
	testutil.WaitFor(t, 10*time.Second, func() bool { return e.sbs.running() == 2 }, "the new template's pool never filled")
	list, _ := e.ts.Templates(as(1000))
	if len(list) != 2 || list[0].Name != DefaultTemplate || list[1].Ref != "1000/sci" {
		t.Fatalf("alice lists %+v", list)
	}
	if list, _ := e.ts.Templates(as(2000)); len(list) != 1 {
		t.Fatalf("bob lists %+v: alice's template shows", list)
	}
	if f := e.ts.Fills(as(1000), true)["1000/sci"]; f.Size != 2 || f.Idle != 2 {
		t.Fatalf("fill %+v", f)
	}

	e.users = 1
	if err := e.ts.DeleteTemplate(as(1000), "sci"); !errdefs.IsConflict(err) {
		t.Fatalf("removed while a session uses it: %v", err)
	}
	e.users = 0
	if err := e.ts.DeleteTemplate(as(2000), "1000/sci"); !errdefs.IsNotFound(err) {
		t.Fatalf("bob removes alice's template: %v", err)
	}
	if err := e.ts.DeleteTemplate(as(1000), "sci"); err != nil {
		t.Fatal(err)
	}
	if n := e.sbs.running(); n != 0 {
		t.Fatalf("%d sandboxes left after the removal", n)
	}
	if _, err := e.ts.Template(as(1000), "sci"); !errdefs.IsNotFound(err) {
		t.Fatalf("removed, still shown: %v", err)
	}
	if err := e.ts.DeleteTemplate(as(0), DefaultTemplate); !errdefs.IsConflict(err) {
		t.Fatalf("the built-in template removed: %v", err)
	}
}

// TestTemplateTrialFails: a template whose sandbox does not start is
// refused with the reason, and forgotten.
func TestTemplateTrialFails(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t, nil)
	e.sbs.mu.Lock()
	e.sbs.failStart = errors.New("no python3 here")
	e.sbs.mu.Unlock()
	_, err := e.ts.AddTemplate(as(0), &api.Template{Name: "broken"})
	if !errdefs.IsInvalidArgument(err) || !strings.Contains(err.Error(), "no python3 here") {
		t.Fatalf("add: %v", err)
	}
	if _, err := e.ts.ForStart("broken"); !errdefs.IsNotFound(err) {
		t.Fatalf("a refused template is still known: %v", err)
	}
}

// TestTemplateNames: a bare name is the caller's own template, else
// root's; another user's only by uid/name, for root or its owner.
func TestTemplateNames(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t, nil)
	for _, uid := range []uint32{0, 1000} {
		if _, err := e.ts.AddTemplate(as(uid), &api.Template{Name: "ds"}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.ts.AddTemplate(as(1000), &api.Template{Name: "ds"}); !errdefs.IsConflict(err) {
		t.Fatalf("alice adds hers again: %v", err)
	}
	for _, c := range []struct {
		uid        uint32
		name, want string
	}{
		{0, "ds", "ds"}, {1000, "ds", "1000/ds"}, {2000, "ds", "ds"},
		{0, "1000/ds", "1000/ds"}, {1000, "0/ds", "ds"},
		{2000, "1000/ds", ""}, {2000, "01000/ds", ""}, {2000, "x/ds", ""}, {0, "1000/../ds", ""},
	} {
		tmpl, err := e.ts.ForUse(as(c.uid), c.name)
		switch {
		case c.want == "" && !errdefs.IsNotFound(err):
			t.Errorf("uid %d names %s: %v, want not found", c.uid, c.name, err)
		case c.want != "" && (err != nil || tmpl.Ref() != c.want):
			t.Errorf("uid %d names %s: %v %v, want %s", c.uid, c.name, tmpl, err, c.want)
		}
	}
}

// TestPoolRoom: a user's pools stay within its share, everyone's within
// pool_max_total; the refusal says what is left.
func TestPoolRoom(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t, func(c *config.Config) { c.PoolMaxTotal, c.PoolSharePerUID = 12, 3 })
	ts, alice, root := e.ts, fakeCaller{uid: 1000}, fakeCaller{root: true}
	for _, c := range []struct {
		who            fakeCaller
		n, total, mine int
		ok             bool
		says           string
	}{
		{alice, 0, 12, 3, true, ""},
		{alice, 3, 0, 0, true, ""},
		{alice, 1, 3, 3, false, "the share is used up"},
		{alice, 2, 4, 2, false, "at most 1"},
		{alice, 1, 12, 0, false, "over pool_max_total (12)"},
		{alice, math.MaxInt, 0, 0, false, "pool_share_per_uid (3"},
		{root, 5, 6, 0, true, ""},
		{root, 1, 12, 0, false, "over pool_max_total (12)"},
		{root, math.MaxInt, 1, 0, false, "over pool_max_total"},
	} {
		err := ts.checkPoolRoom(c.who, c.n, c.total, c.mine)
		if c.ok != (err == nil) || err != nil && (!errdefs.IsResourceExhausted(err) || !strings.Contains(err.Error(), c.says)) {
			t.Errorf("%+v: %v", c, err)
		}
	}
}
