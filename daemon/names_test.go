package daemon

import (
	"strings"
	"testing"

	"github.com/containerd/errdefs"

	"github.com/sandboxd/sandboxd/api"
)

// TestSessionNames: a name is unique among its owner's sessions (409),
// another owner may use it; a name or an unambiguous id prefix works
// wherever an id does, and only among the sessions the caller may see.
func TestSessionNames(t *testing.T) {
	e := newEnv(t, nil)
	d := e.start()
	mine, err := d.CreateSession(as(1000), &api.CreateSessionRequest{Name: "build-1"})
	if err != nil || mine.Name != "build-1" {
		t.Fatalf("create: %+v %v", mine, err)
	}
	if _, err := d.CreateSession(as(1000), &api.CreateSessionRequest{Name: "build-1"}); !errdefs.IsConflict(err) || !strings.Contains(err.Error(), mine.ID) {
		t.Fatalf("a taken name: %v", err)
	}
	theirs, err := d.CreateSession(as(2000), &api.CreateSessionRequest{Name: "build-1"})
	if err != nil {
		t.Fatalf("another owner's same name: %v", err)
	}
	for _, bad := range []string{"-x", "a b", "ü", strings.Repeat("a", 129)} {
		if _, err := d.CreateSession(as(1000), &api.CreateSessionRequest{Name: bad}); !errdefs.IsInvalidArgument(err) {
			t.Errorf("name %q: %v", bad, err)
		}
	}

	// By name and by prefix, as its owner.
	for _, ref := range []string{"build-1", mine.ID[:6], mine.ID} {
		if r := mustExec(t, d, as(1000), ref, "1 + 1"); r.SessionID != mine.ID {
			t.Errorf("exec by %q ran in %s", ref, r.SessionID)
		}
		if got, err := d.GetSession(as(1000), ref); err != nil || got.ID != mine.ID {
			t.Errorf("get by %q: %+v %v", ref, got, err)
		}
	}
	// Another user reaches neither name nor prefix of a session not theirs.
	if got, err := d.GetSession(as(2000), "build-1"); err != nil || got.ID != theirs.ID {
		t.Errorf("uid 2000's build-1: %+v %v", got, err)
	}
	if _, err := d.GetSession(as(3000), "build-1"); !errdefs.IsNotFound(err) {
		t.Errorf("uid 3000's build-1: %v", err)
	}
	if _, err := d.GetSession(as(3000), mine.ID[:6]); !errdefs.IsNotFound(err) {
		t.Errorf("uid 3000 by prefix: %v", err)
	}
	// Root sees both build-1s: ambiguous; a prefix of both ids too.
	if _, err := d.GetSession(root, "build-1"); !errdefs.IsInvalidArgument(err) || !strings.Contains(err.Error(), "2 sessions") {
		t.Errorf("root's build-1: %v", err)
	}
	if _, err := d.GetSession(root, ""); err == nil {
		t.Error("an empty reference found a session")
	}

	// Deleted by name, it is gone for good (record, events) and the name
	// is free again.
	if err := d.DeleteSession(as(1000), "build-1"); err != nil {
		t.Fatal(err)
	}
	if _, err := d.GetSession(as(1000), mine.ID); !errdefs.IsNotFound(err) {
		t.Errorf("after delete by name: %v", err)
	}
	if recs, _ := d.store.Sessions(); len(recs) != 1 {
		t.Errorf("records left: %d, want 1", len(recs))
	}
	if _, err := d.CreateSession(as(1000), &api.CreateSessionRequest{Name: "build-1"}); err != nil {
		t.Errorf("the freed name: %v", err)
	}
}
