package daemon

import (
	"testing"

	"github.com/containerd/errdefs"
)

// TestCwdIn: a command starts in its session's home unless told, and may
// start under that home (the workspace shown there) when it is not
// /workspace; no other folder under /home is one.
func TestCwdIn(t *testing.T) {
	for _, c := range []struct{ home, cwd, want string }{
		{"/workspace", "", "/workspace"},
		{"/home/user", "", "/home/user"},
		{"/home/user", "/home/user", "/home/user"},
		{"/home/user", "/home/user/a/b", "/home/user/a/b"},
		{"/home/user", "/workspace/a", "/workspace/a"},
		{"/home/user", "/tmp", "/tmp"},
	} {
		// Checked as a request's would be first.
		cwd, err := checkCommand([]string{"true"}, nil, c.cwd)
		if err != nil {
			t.Fatalf("%+v: %v", c, err)
		}
		if got, err := cwdIn(c.home, cwd); err != nil || got != c.want {
			t.Errorf("%+v: %q %v", c, got, err)
		}
	}
	for _, c := range []struct{ home, cwd string }{
		{"/workspace", "/home/user"},
		{"/home/user", "/home/other"},
		{"/home/user", "/home/username"},
		{"/home/user", "/home/user/../../etc"},
		{"/home/user", "/home"},
	} {
		cwd, err := checkCommand([]string{"true"}, nil, c.cwd)
		if err == nil {
			_, err = cwdIn(c.home, cwd)
		}
		if !errdefs.IsInvalidArgument(err) {
			t.Errorf("%+v: %v, want an invalid argument", c, err)
		}
	}
}
