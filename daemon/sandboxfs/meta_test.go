package sandboxfs

import (
	"errors"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/containerd/errdefs"
	"golang.org/x/sys/unix"
)

// xattrsWork skips a test on a disk without user extended attributes.
func xattrsWork(t *testing.T, dir string) {
	t.Helper()
	p := filepath.Join(dir, ".probe")
	os.WriteFile(p, nil, 0o644)
	defer os.Remove(p)
	if err := unix.Setxattr(p, "user.probe", []byte("1"), 0); errors.Is(err, unix.ENOTSUP) {
		t.Skipf("%s keeps no user extended attributes", dir)
	}
}

func TestMetadata(t *testing.T) {
	fs, base := newFS(t)
	xattrsWork(t, base)
	meta := map[string]string{"author": "ada", "purpose": "a test: 1+1=2"}
	if _, err := fs.WriteMeta(Workspace, "d/m.txt", strings.NewReader("x"), 10, meta); err != nil {
		t.Fatal(err)
	}
	// Kept as user. attributes of the file itself.
	buf := make([]byte, 64)
	if n, err := unix.Getxattr(filepath.Join(fs.Workspace, "d/m.txt"), "user.author", buf); err != nil || string(buf[:n]) != "ada" {
		t.Fatalf("the attribute: %q %v", buf[:n], err)
	}
	st, err := fs.Stat(Workspace, "d/m.txt")
	if err != nil || !maps.Equal(st.Metadata, meta) {
		t.Fatalf("stat: %+v %v", st, err)
	}
	// The code's own user. attributes show too: metadata is the file's,
	// whoever wrote it.
	os.Mkdir(filepath.Join(fs.Workspace, "d/sub"), 0o755)
	unix.Setxattr(filepath.Join(fs.Workspace, "d/sub"), "user.by-code", []byte("yes"), 0)
	dir, _ := fs.Open(Workspace, "d")
	list, err := List(dir)
	dir.Close()
	if err != nil || len(list.Entries) != 2 {
		t.Fatalf("list: %+v %v", list, err)
	}
	for _, e := range list.Entries {
		want := meta
		if e.Name == "sub" {
			want = map[string]string{"by-code": "yes"}
		}
		if !maps.Equal(e.Metadata, want) {
			t.Errorf("list %s: %v, want %v", e.Name, e.Metadata, want)
		}
	}
	if st, _ := fs.Stat(Workspace, "d/sub"); st.Metadata["by-code"] != "yes" {
		t.Errorf("a folder's stat: %+v", st)
	}
	// A symlink has none, and is not followed for any.
	os.Symlink("m.txt", filepath.Join(fs.Workspace, "d/link"))
	if st, err := fs.Stat(Workspace, "d/link"); err != nil || st.Metadata != nil {
		t.Errorf("a symlink's stat: %+v %v", st, err)
	}
	// A write replaces the file whole: without metadata, it has none.
	fs.Write(Workspace, "d/m.txt", strings.NewReader("y"), 10)
	if st, _ := fs.Stat(Workspace, "d/m.txt"); st.Metadata != nil {
		t.Errorf("after a plain write: %v", st.Metadata)
	}
	long := strings.Repeat("k", MaxMetaKey+1)
	many := map[string]string{}
	for i := range MaxMetaKeys + 1 {
		many[strings.Repeat("k", i+1)] = ""
	}
	for name, bad := range map[string]map[string]string{
		"upper case": {"Author": "x"},
		"empty key":  {"": "x"},
		"a space":    {"a b": "x"},
		"a long key": {long: "x"},
		"a newline":  {"a": "x\ny"},
		"non-ASCII":  {"a": "é"},
		"too many":   many,
		"too large":  {"a": strings.Repeat("v", MaxMetaBytes)},
	} {
		if _, err := fs.WriteMeta(Workspace, "bad.txt", strings.NewReader("x"), 10, bad); !errdefs.IsInvalidArgument(err) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := os.Stat(filepath.Join(fs.Workspace, "bad.txt")); !os.IsNotExist(err) {
		t.Error("a refused write left a file")
	}
}
