package main

import (
	"os/user"
	"path/filepath"
	"testing"
)

// TestE2BStateDir: the packaged unit's user and root share the unit's
// state folder, so `sudo -u sandboxd-e2b sandboxctl e2b key create` makes
// keys the service sees; anyone else gets their own.
func TestE2BStateDir(t *testing.T) {
	defer func(e func() int, u func() (*user.User, error)) { geteuid, currentUser = e, u }(geteuid, currentUser)
	t.Setenv(e2bStateEnv, "")
	t.Setenv("XDG_STATE_HOME", "/home/alice/.state")
	as := func(uid int, name string) {
		geteuid = func() int { return uid }
		currentUser = func() (*user.User, error) { return &user.User{Username: name}, nil }
	}
	for _, tc := range []struct {
		uid        int
		name, flag string
		env, want  string
	}{
		{uid: 0, name: "root", want: e2bPackaged},
		{uid: 998, name: e2bUser, want: e2bPackaged},
		{uid: 1000, name: "alice", want: filepath.Join("/home/alice/.state", "sandboxd-e2b")},
		{uid: 998, name: e2bUser, env: "/srv/e2b", want: "/srv/e2b"},
		{uid: 0, name: "root", env: "/srv/e2b", flag: "/tmp/x", want: "/tmp/x"},
	} {
		as(tc.uid, tc.name)
		t.Setenv(e2bStateEnv, tc.env)
		if got := e2bStateDir(tc.flag); got != tc.want {
			t.Errorf("%s (uid %d), flag %q, env %q: %s, want %s", tc.name, tc.uid, tc.flag, tc.env, got, tc.want)
		}
	}
}
