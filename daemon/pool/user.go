package pool

import (
	"path"
	"regexp"
	"strings"

	"github.com/containerd/errdefs"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/isolation"
)

// userName is a portable POSIX user name as useradd takes it: a lower
// case letter or '_' first, at most 32 characters.
var userName = regexp.MustCompile(`^[a-z_][a-z0-9_-]{0,31}$`)

// reservedUsers are the names the sandbox's /etc gives other ids, and
// the groups' names (its group is named as its user).
var reservedUsers = map[string]bool{"root": true, "nobody": true, "nogroup": true, "tty": true}

// checkUser checks a template's user and returns it as kept: nil for
// the default (none asked, or the default asked), else the name with its
// home ("/workspace" if none given).
func checkUser(u *api.TemplateUser) (*api.TemplateUser, error) {
	if u == nil {
		return nil, nil
	}
	if !userName.MatchString(u.Name) {
		return nil, api.Errorf(errdefs.ErrInvalidArgument, "bad user name %s: use 1 to 32 of a-z, 0-9, '_' and '-', starting with a letter or '_'", api.Quote(u.Name))
	}
	if reservedUsers[u.Name] {
		return nil, api.Errorf(errdefs.ErrInvalidArgument, "user name %s is taken by the sandbox's own users and groups: choose another", api.Quote(u.Name))
	}
	home := u.Home
	if home == "" {
		home = isolation.DefaultUserHome
	}
	if home != isolation.DefaultUserHome {
		dir, base := path.Split(home)
		if dir != "/home/" || base == "" || base == "." || base == ".." || path.Clean(home) != home || strings.ContainsAny(base, "\x00") {
			return nil, api.Errorf(errdefs.ErrInvalidArgument, "bad home %s: use /workspace or a folder right under /home, e.g. /home/%s", api.Quote(u.Home), u.Name)
		}
	}
	if u.Name == isolation.DefaultUserName && home == isolation.DefaultUserHome {
		return nil, nil
	}
	return &api.TemplateUser{Name: u.Name, Home: home}, nil
}

// User is who its sessions' code is (the zero User: the default).
func (t *Template) User() isolation.User {
	if u := t.def.User; u != nil {
		return isolation.User{Name: u.Name, Home: u.Home}
	}
	return isolation.User{}
}

// UserOf is the user of template ref's sessions: the zero User (the
// default) when no template of the reference is known any more.
func (ts *Templates) UserOf(ref string) isolation.User {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if t := ts.byName[ref]; t != nil {
		return t.User()
	}
	return isolation.User{}
}
