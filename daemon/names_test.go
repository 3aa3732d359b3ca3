package daemon

import (
	"strings"
	"testing"

	"github.com/containerd/errdefs"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/store"
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

// TestNameNeverShadowsAnID: a member's session named like a prefix of
// root's id must not catch root's work. Such names are refused; a word
// that is the caller's own session's id, or name, is that session; one
// that another owner's name and an id prefix both match is ambiguous.
func TestNameNeverShadowsAnID(t *testing.T) {
	e := newEnv(t, nil)
	d := e.start()
	rootS, err := d.CreateSession(root, &api.CreateSessionRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{rootS.ID[:6], rootS.ID, "cafe", "0123"} {
		if _, err := d.CreateSession(as(1000), &api.CreateSessionRequest{Name: bad}); !errdefs.IsInvalidArgument(err) || !strings.Contains(err.Error(), "session id") {
			t.Errorf("name %q: %v", bad, err)
		}
	}
	for _, ok := range []string{"abc", "cafe-1", "Cafe", "face0g", "x0123"} {
		if _, err := d.CreateSession(as(1000), &api.CreateSessionRequest{Name: ok}); err != nil {
			t.Errorf("name %q: %v", ok, err)
		}
	}

	// Names made before the rule (records of an older daemon) still
	// cannot catch root's work: put one in the table as it would be
	// restored.
	member, err := d.CreateSession(as(1000), &api.CreateSessionRequest{Name: "old"})
	if err != nil {
		t.Fatal(err)
	}
	s, _ := d.sessions.resolve(member.ID, callerFrom(as(1000)))
	s.Update(func(r *store.Record) { r.Name = rootS.ID[:6] })

	// Root's exact id is root's session.
	if got, err := d.GetSession(root, rootS.ID); err != nil || got.ID != rootS.ID {
		t.Errorf("root by id: %+v %v", got, err)
	}
	// Root's prefix that the member's name also matches: ambiguous, both
	// listed; root's work goes nowhere.
	_, err = d.GetSession(root, rootS.ID[:6])
	if !errdefs.IsInvalidArgument(err) || !strings.Contains(err.Error(), "ambiguous") ||
		!strings.Contains(err.Error(), rootS.ID) || !strings.Contains(err.Error(), member.ID) {
		t.Errorf("root by a prefix a member's name shadows: %v", err)
	}
	if _, err := d.Exec(root, rootS.ID[:6], &api.ExecRequest{Code: "1"}, nil); !errdefs.IsInvalidArgument(err) {
		t.Errorf("exec by the shadowed prefix: %v", err)
	}
	// The member's own name is the member's (root's id is not theirs to see).
	if got, err := d.GetSession(as(1000), rootS.ID[:6]); err != nil || got.ID != member.ID {
		t.Errorf("member by its own name: %+v %v", got, err)
	}
	// Root's own name wins over another owner's same name and any prefix.
	mine, err := d.CreateSession(root, &api.CreateSessionRequest{Name: "old"})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := d.GetSession(root, "old"); err != nil || got.ID != mine.ID {
		t.Errorf("root's own name: %+v %v", got, err)
	}
}
