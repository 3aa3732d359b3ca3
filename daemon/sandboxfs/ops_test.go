package sandboxfs

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/containerd/errdefs"

	"github.com/sandboxd/sandboxd/api"
)

func TestStat(t *testing.T) {
	fs, base := newFS(t)
	fs.Names = func(uid, gid uint32) (string, string) { return "sandbox", "sandbox" }
	ws := filepath.Join(base, "ws")
	if err := os.WriteFile(filepath.Join(ws, "a.txt"), []byte("hello"), 0o640); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc/passwd", filepath.Join(ws, "link")); err != nil {
		t.Fatal(err)
	}
	st, err := fs.Stat(Workspace, "a.txt")
	if err != nil {
		t.Fatal(err)
	}
	if st.Name != "a.txt" || st.Path != "/workspace/a.txt" || st.Type != "file" || st.Size != 5 ||
		st.Mode != "0640" || st.Permissions != "-rw-r-----" || st.Owner != "sandbox" || st.ModifiedAt.IsZero() {
		t.Fatalf("stat: %+v", st)
	}
	st, err = fs.Stat(Workspace, "link")
	if err != nil || st.Type != "symlink" || st.SymlinkTarget != "/etc/passwd" || st.Permissions[0] != 'l' {
		t.Fatalf("symlink: %+v %v", st, err)
	}
	st, err = fs.Stat(Workspace, "")
	if err != nil || st.Type != "dir" || st.Name != "workspace" || st.Path != "/workspace" || st.Permissions[0] != 'd' {
		t.Fatalf("root: %+v %v", st, err)
	}
	if _, err := fs.Stat(Workspace, "nope"); !errdefs.IsNotFound(err) {
		t.Fatalf("missing: %v", err)
	}
	// A path through a symlink out is refused, never followed.
	if err := os.Symlink("/", filepath.Join(ws, "out")); err != nil {
		t.Fatal(err)
	}
	if _, err := fs.Stat(Workspace, "out/etc"); !errdefs.IsInvalidArgument(err) {
		t.Fatalf("escape: %v", err)
	}
	// Without names, the numbers.
	fs.Names = nil
	if st, _ := fs.Stat(Workspace, "a.txt"); st.Owner == "" || st.Owner == "sandbox" {
		t.Fatalf("owner without names: %q", st.Owner)
	}
}

func TestMkdir(t *testing.T) {
	fs, base := newFS(t)
	made, err := fs.Mkdir(Workspace, "a/b/c")
	if err != nil || !made.Created || made.Type != "dir" || made.Name != "c" || made.Path != "/workspace/a/b/c" {
		t.Fatalf("mkdir: %+v %v", made, err)
	}
	if fi, err := os.Stat(filepath.Join(base, "ws/a/b/c")); err != nil || !fi.IsDir() {
		t.Fatal(err)
	}
	made, err = fs.Mkdir(Workspace, "a/b/c")
	if err != nil || made.Created {
		t.Fatalf("again: %+v %v", made, err)
	}
	if err := os.WriteFile(filepath.Join(base, "ws/f"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := fs.Mkdir(Workspace, "f"); !errdefs.IsConflict(err) {
		t.Fatalf("over a file: %v", err)
	}
	if _, err := fs.Mkdir(Workspace, "f/g"); !errdefs.IsInvalidArgument(err) {
		t.Fatalf("under a file: %v", err)
	}
	if err := os.Symlink("/", filepath.Join(base, "ws/out")); err != nil {
		t.Fatal(err)
	}
	if _, err := fs.Mkdir(Workspace, "out/x"); !errdefs.IsInvalidArgument(err) {
		t.Fatalf("escape: %v", err)
	}
}

func TestMove(t *testing.T) {
	fs, base := newFS(t)
	ws := filepath.Join(base, "ws")
	for _, n := range []string{"a", "b"} {
		if err := os.WriteFile(filepath.Join(ws, n), []byte(n), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(ws, "d"), 0o755); err != nil {
		t.Fatal(err)
	}
	st, err := fs.Move(Workspace, "a", Workspace, "d/a2")
	if err != nil || st.Path != "/workspace/d/a2" || st.Type != "file" {
		t.Fatalf("move: %+v %v", st, err)
	}
	if b, err := os.ReadFile(filepath.Join(ws, "d/a2")); err != nil || string(b) != "a" {
		t.Fatalf("moved: %q %v", b, err)
	}
	if _, err := fs.Move(Workspace, "b", Workspace, "d/a2"); !errdefs.IsConflict(err) {
		t.Fatalf("over a file: %v", err)
	}
	if _, err := fs.Move(Workspace, "nope", Workspace, "x"); !errdefs.IsNotFound(err) {
		t.Fatalf("missing: %v", err)
	}
	if _, err := fs.Move(Workspace, "d", Workspace, "d/e"); !errdefs.IsInvalidArgument(err) {
		t.Fatalf("into itself: %v", err)
	}
	if _, err := fs.Move(Workspace, "b", Tmp, "b"); !errdefs.IsInvalidArgument(err) {
		t.Fatalf("across roots: %v", err)
	}
	if _, err := fs.Move(Workspace, "b", Workspace, ""); !errdefs.IsInvalidArgument(err) {
		t.Fatalf("onto the root: %v", err)
	}
	if err := os.Symlink("/tmp", filepath.Join(ws, "out")); err != nil {
		t.Fatal(err)
	}
	if _, err := fs.Move(Workspace, "b", Workspace, "out/b"); !errdefs.IsInvalidArgument(err) {
		t.Fatalf("escape: %v", err)
	}
}

func TestListDepth(t *testing.T) {
	fs, base := newFS(t)
	ws := filepath.Join(base, "ws")
	for _, d := range []string{"a/b/c"} {
		if err := os.MkdirAll(filepath.Join(ws, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"top", "a/one", "a/b/two", "a/b/c/three"} {
		if err := os.WriteFile(filepath.Join(ws, f), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("/", filepath.Join(ws, "a/out")); err != nil {
		t.Fatal(err)
	}
	paths := func(depth, max int) ([]string, error) {
		f, err := fs.Open(Workspace, "")
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		list, err := ListDepth(f, "/workspace", depth, max)
		if err != nil {
			return nil, err
		}
		var out []string
		for _, e := range list.Entries {
			out = append(out, e.Path)
		}
		slices.Sort(out)
		return out, nil
	}
	got, err := paths(2, 100)
	want := []string{"/workspace/a", "/workspace/a/b", "/workspace/a/one", "/workspace/a/out", "/workspace/top"}
	if err != nil || !slices.Equal(got, want) {
		t.Fatalf("depth 2: %v %v", got, err)
	}
	got, _ = paths(16, 100)
	if len(got) != 8 || !slices.Contains(got, "/workspace/a/b/c/three") {
		t.Fatalf("depth 16: %v", got)
	}
	if _, err := paths(16, 5); !api.IsPayloadTooLarge(err) {
		t.Fatalf("over the bound: %v", err)
	}
	for _, d := range []int{0, -1, MaxDepth + 1} {
		if err := CheckDepth(d); !errdefs.IsInvalidArgument(err) {
			t.Fatalf("depth %d: %v", d, err)
		}
	}
	// Depth 1 is today's listing: names, no paths.
	f, _ := fs.Open(Workspace, "")
	defer f.Close()
	list, _ := List(f)
	for _, e := range list.Entries {
		if e.Path != "" {
			t.Fatalf("depth 1 has a path: %+v", e)
		}
	}
}
