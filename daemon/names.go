package daemon

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/containerd/errdefs"

	"github.com/sandboxd/sandboxd/api"
	sess "github.com/sandboxd/sandboxd/daemon/session"
)

// A session may have a name, unique among its owner's sessions, usable
// wherever its id is; so is an unambiguous prefix of its id, as docker
// takes them.
//
// One word can name a session by name and another by id prefix. Root, who
// may use every user's sessions, must never be handed a member's session
// for a word that also names one of root's own (a member naming a session
// "926a3e" after root's 926a3e76… would receive root's files and code):
// names that read as an id are refused, and resolve prefers an exact id,
// then the caller's own names, and answers "ambiguous" when what is left
// matches more than one session.

var (
	nameRE = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9_.-]{0,127}$`)
	// idLikeRE is a word that could be (a prefix of) a session id: ids
	// are lowercase hex. Four characters, the shortest prefix people type.
	idLikeRE = regexp.MustCompile(`^[0-9a-f]{4,}$`)
)

// checkName checks a create's name: docker's rules, and not a word that
// could be read as a session id.
func checkName(name string) error {
	if name == "" {
		return nil
	}
	if !nameRE.MatchString(name) {
		return api.Errorf(errdefs.ErrInvalidArgument, "bad name %s: a name is letters, digits, '_', '.' and '-', starting with a letter or digit, up to 128", api.Quote(name))
	}
	if idLikeRE.MatchString(name) {
		return api.Errorf(errdefs.ErrInvalidArgument, "bad name %s: it could be read as a session id (lowercase hex of 4 or more characters); add a letter past f or a '-'", api.Quote(name))
	}
	return nil
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

// resolve finds the session ref names among those caller may use, in
// this order: the session whose id is ref; the caller's own session named
// ref (names are unique per owner); else the one session among the rest
// (other owners' sessions named ref, and ids ref prefixes) — more than one
// is ambiguous, and the answer lists them, so a word never quietly picks
// one user's session over another's.
func (t *table) resolve(ref string, caller caller) (*session, error) {
	if ref == "" {
		return nil, sess.NoSuchSession(ref)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	var own, rest []*session
	for _, s := range t.sessions {
		id, owner, name := s.naming()
		if !caller.mayUse(owner) {
			continue
		}
		switch {
		case id == ref:
			return s, nil
		case name == ref && caller.Owns(owner):
			own = append(own, s)
		case name == ref, strings.HasPrefix(id, ref):
			rest = append(rest, s)
		}
	}
	if len(own) == 1 {
		return own[0], nil
	}
	switch found := append(own, rest...); len(found) {
	case 0:
		return nil, sess.NoSuchSession(ref)
	case 1:
		return found[0], nil
	default:
		ids := make([]string, len(found))
		for i, s := range found {
			id, owner, name := s.naming()
			ids[i] = id
			if name == ref {
				ids[i] = fmt.Sprintf("%s (named %s, uid %d)", id, name, owner)
			}
		}
		slices.Sort(ids)
		return nil, api.Errorf(errdefs.ErrInvalidArgument, "%s is ambiguous: it names %d sessions (%s); give more of the id", api.Quote(ref), len(found), strings.Join(ids, ", "))
	}
}

// naming is the session's id, owner and name. The table's lock may be
// held (it comes before a session's).
func (s *session) naming() (id string, owner uint32, name string) {
	rec := s.Snapshot()
	return rec.ID, rec.OwnerUID, rec.Name
}
