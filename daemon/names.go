package daemon

import (
	"regexp"
	"strings"

	"github.com/containerd/errdefs"

	"github.com/sandboxd/sandboxd/api"
)

// A session may have a name, unique among its owner's sessions, usable
// wherever its id is; so is an unambiguous prefix of its id, as docker
// takes them.

var nameRE = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9_.-]{0,127}$`)

// checkName checks a create's name: docker's rules.
func checkName(name string) error {
	if name == "" || nameRE.MatchString(name) {
		return nil
	}
	return api.Errorf(errdefs.ErrInvalidArgument, "bad name %s: a name is letters, digits, '_', '.' and '-', starting with a letter or digit, up to 128", api.Quote(name))
}

// claimName holds name for a session of owner being created; taken
// answers 409 naming the session that has it. release gives it back
// (the session, once in the table, holds it by its record).
func (t *table) claimName(owner uint32, name string) (release func(), err error) {
	if name == "" {
		return func() {}, nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	k := nameKey{owner, name}
	if t.names[k] {
		return nil, api.Errorf(errdefs.ErrConflict, "the name %s is being given to another session", api.Quote(name))
	}
	for _, s := range t.sessions {
		if id, o, n := s.naming(); o == owner && n == name {
			return nil, api.Errorf(errdefs.ErrConflict, "the name %s is taken by session %s: choose another, or delete that one", api.Quote(name), id)
		}
	}
	t.names[k] = true
	return func() {
		t.mu.Lock()
		delete(t.names, k)
		t.mu.Unlock()
	}, nil
}

// resolve finds the session ref names among those caller may use: by
// name (the caller's own first: names are unique per owner), else by an
// unambiguous prefix of its id.
func (t *table) resolve(ref string, caller caller) (*session, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	var own, others, prefixed []*session
	for _, s := range t.sessions {
		id, owner, name := s.naming()
		if !caller.mayUse(owner) {
			continue
		}
		switch {
		case name == ref && caller.Owns(owner):
			own = append(own, s)
		case name == ref:
			others = append(others, s)
		case ref != "" && strings.HasPrefix(id, ref):
			prefixed = append(prefixed, s)
		}
	}
	for _, found := range [][]*session{own, others, prefixed} {
		switch len(found) {
		case 0:
			continue
		case 1:
			return found[0], nil
		}
		ids := make([]string, len(found))
		for i, s := range found {
			ids[i], _, _ = s.naming()
		}
		return nil, api.Errorf(errdefs.ErrInvalidArgument, "%s names %d sessions (%s): give more of the id", api.Quote(ref), len(found), strings.Join(ids, ", "))
	}
	return nil, errNoSession(ref)
}

// naming is the session's id, owner and name. The table's lock may be
// held (it comes before a session's).
func (s *session) naming() (id string, owner uint32, name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rec.ID, s.rec.OwnerUID, s.rec.Name
}
