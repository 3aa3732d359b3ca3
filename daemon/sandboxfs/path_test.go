package sandboxfs

import (
	"strings"
	"testing"

	"github.com/containerd/errdefs"
)

func TestSplit(t *testing.T) {
	cases := []struct {
		in   string
		root Root
		rel  string
		bad  bool
	}{
		{in: "a.txt", root: Workspace, rel: "a.txt"},
		{in: "./a//b/./c", root: Workspace, rel: "a/b/c"},
		{in: "/workspace", root: Workspace, rel: ""},
		{in: "/workspace/", root: Workspace, rel: ""},
		{in: "/workspace/x/y", root: Workspace, rel: "x/y"},
		{in: "//workspace//x", root: Workspace, rel: "x"},
		{in: "/tmp/x", root: Tmp, rel: "x"},
		{in: "/tmp", root: Tmp, rel: ""},
		{in: "", bad: true},
		{in: "/", bad: true},
		{in: "/etc/passwd", bad: true},
		{in: "/workspacex/a", bad: true},
		{in: "/tmpx", bad: true},
		{in: "..", bad: true},
		{in: "a/../b", bad: true},
		{in: "/workspace/..", bad: true},
		{in: "/tmp/../etc", bad: true},
		{in: "a\x00b", bad: true},
		{in: strings.Repeat("a", MaxPath+1), bad: true},
	}
	for _, c := range cases {
		root, rel, err := Split(c.in)
		if c.bad {
			if !errdefs.IsInvalidArgument(err) {
				t.Errorf("Split(%q) = %v %q %v, want invalid argument", c.in, root, rel, err)
			}
			continue
		}
		if err != nil || root != c.root || rel != c.rel {
			t.Errorf("Split(%q) = %v %q %v, want %v %q", c.in, root, rel, err, c.root, c.rel)
		}
	}
}

// FuzzSplit checks no input gives a path that could climb out.
func FuzzSplit(f *testing.F) {
	for _, s := range []string{"a", "/workspace/a", "/tmp/../x", "a/./b", "//tmp//", "..", "/etc", "a\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		_, rel, err := Split(p)
		if err != nil {
			return
		}
		if strings.HasPrefix(rel, "/") || strings.Contains(rel, "\x00") {
			t.Fatalf("Split(%q) gave %q", p, rel)
		}
		for _, c := range strings.Split(rel, "/") {
			if c == ".." || (c == "" && rel != "") || c == "." {
				t.Fatalf("Split(%q) gave %q", p, rel)
			}
		}
	})
}

// TestCwd: an execution's cwd is relative to /workspace and confined to
// what the file API serves; "../../etc" once ran in /etc.
func TestCwd(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"src", "/workspace/src"},
		{"./src//x/", "/workspace/src/x"},
		{"/workspace", "/workspace"},
		{"/workspace/a", "/workspace/a"},
		{"/tmp/build", "/tmp/build"},
		{".", "/workspace"},
		{"../../etc", ""},
		{"/etc", ""},
		{"/workspace/../etc", ""},
		{"a\x00b", ""},
		{"", ""},
	} {
		got, err := Cwd(c.in)
		if c.want == "" {
			if !errdefs.IsInvalidArgument(err) || !strings.HasPrefix(err.Error(), "bad cwd ") {
				t.Errorf("Cwd(%q) = %q, %v; want a bad cwd", c.in, got, err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("Cwd(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
}
