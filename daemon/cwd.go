package daemon

import (
	"strings"

	"github.com/sandboxd/sandboxd/daemon/pool"
	"github.com/sandboxd/sandboxd/daemon/sandboxfs"
)

// A session's commands may start under /workspace or /tmp, or under the
// home of its template's user when that is elsewhere (/home/user shows
// /workspace; see isolation.User). Which home a session has is known only
// once the session is: a request's checks (checkCommand, checkExec) let a
// folder under /home through, and cwdOf checks it against the session.

// homeDirs is where template users' homes are (pool.checkUser).
const homeDirs = "/home/"

// deferredCwd says cwd is to be checked against its session's home.
func deferredCwd(cwd string) bool { return strings.HasPrefix(cwd, homeDirs) }

// homeOf is where the session's commands start unless told otherwise: its
// template's user's home (/workspace for most).
func homeOf(t *pool.Templates, s *session) string {
	return t.UserOf(s.Snapshot().Template).HomeDir()
}

// cwdOf is the folder a command of session s starts in for a request's
// cwd (checked already, or deferred): its home if none is given; a folder
// under its home as the same folder under /workspace would be.
func cwdOf(t *pool.Templates, s *session, cwd string) (string, error) {
	return cwdIn(homeOf(t, s), cwd)
}

// cwdIn is cwdOf for a session whose home is home.
func cwdIn(home, cwd string) (string, error) {
	if cwd == "" {
		return home, nil
	}
	if !deferredCwd(cwd) {
		return cwd, nil
	}
	if home != sandboxfs.Workspace.String() && (cwd == home || strings.HasPrefix(cwd, home+"/")) {
		c, err := sandboxfs.Cwd(sandboxfs.Workspace.String() + strings.TrimPrefix(cwd, home))
		if err != nil {
			return "", err
		}
		return home + strings.TrimPrefix(c, sandboxfs.Workspace.String()), nil
	}
	return sandboxfs.Cwd(cwd) // outside: its error says where commands may start
}
