package sandboxfs

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/containerd/errdefs"
)

func newFS(t *testing.T) (*FS, string) {
	t.Helper()
	base := t.TempDir()
	ws, tmp := filepath.Join(base, "ws"), filepath.Join(base, "tmp")
	for _, d := range []string{ws, tmp} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return &FS{Workspace: ws, Tmp: tmp, UID: os.Getuid(), GID: os.Getgid()}, base
}

func TestWriteReadRemove(t *testing.T) {
	fs, _ := newFS(t)
	n, err := fs.Write(Workspace, "a/b/c.txt", strings.NewReader("hello"), 100)
	if err != nil || n != 5 {
		t.Fatalf("write: %d %v", n, err)
	}
	f, err := fs.Open(Workspace, "a/b/c.txt")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(f)
	f.Close()
	if string(b) != "hello" {
		t.Fatalf("read %q", b)
	}
	dir, err := fs.Open(Workspace, "a")
	if err != nil {
		t.Fatal(err)
	}
	list, err := List(dir)
	dir.Close()
	if err != nil || len(list.Entries) != 1 || list.Entries[0].Name != "b" || list.Entries[0].Type != "dir" {
		t.Fatalf("list: %+v %v", list, err)
	}
	// A listing's permissions are stat's, as ls writes them.
	if st, err := fs.Stat(Workspace, "a/b"); err != nil || list.Entries[0].Permissions != st.Permissions || !strings.HasPrefix(st.Permissions, "drwx") {
		t.Fatalf("list permissions %q, stat %+v %v", list.Entries[0].Permissions, st, err)
	}
	if _, err := fs.Write(Workspace, "big", strings.NewReader(strings.Repeat("x", 101)), 100); err == nil {
		t.Fatal("a write over the limit must fail")
	}
	if err := fs.Remove(Workspace, "a"); err != nil {
		t.Fatal(err)
	}
	if _, err := fs.Open(Workspace, "a/b/c.txt"); !errdefs.IsNotFound(err) {
		t.Fatalf("after remove: %v", err)
	}
	if err := fs.Remove(Workspace, ""); !errdefs.IsInvalidArgument(err) {
		t.Fatalf("removing the root: %v", err)
	}
}

func TestSymlinksCannotLeave(t *testing.T) {
	fs, base := newFS(t)
	secret := filepath.Join(base, "secret")
	os.WriteFile(secret, []byte("s"), 0o600)
	os.Mkdir(filepath.Join(base, "outside"), 0o755)
	links := map[string]string{
		"abs":    "/",
		"up":     "../",
		"secret": secret,
		"rel":    "../secret",
		"out":    "../outside",
	}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(fs.Workspace, name)); err != nil {
			t.Fatal(err)
		}
	}
	os.Mkdir(filepath.Join(fs.Workspace, "in"), 0o755)
	os.Symlink("in", filepath.Join(fs.Workspace, "inside"))

	for _, p := range []string{"abs/etc/passwd", "up/secret", "secret", "rel", "out"} {
		if _, err := fs.Open(Workspace, p); !errdefs.IsInvalidArgument(err) {
			t.Errorf("open %s: %v", p, err)
		}
	}
	for _, p := range []string{"abs/x", "up/x", "secret", "rel", "out/x", "out/new/x"} {
		if _, err := fs.Write(Workspace, p, strings.NewReader("pwned"), 100); !errdefs.IsInvalidArgument(err) {
			t.Errorf("write %s: %v", p, err)
		}
	}
	for _, p := range []string{"abs/etc", "up/secret", "out/x"} {
		if err := fs.Remove(Workspace, p); !errdefs.IsInvalidArgument(err) {
			t.Errorf("remove %s: %v", p, err)
		}
	}
	if b, _ := os.ReadFile(secret); string(b) != "s" {
		t.Fatal("secret changed")
	}
	if ents, _ := os.ReadDir(filepath.Join(base, "outside")); len(ents) != 0 {
		t.Fatal("something was written outside")
	}
	// A symlink that stays inside works.
	if _, err := fs.Write(Workspace, "inside/f", strings.NewReader("ok"), 100); err != nil {
		t.Fatalf("write through an inside symlink: %v", err)
	}
	if _, err := os.Stat(filepath.Join(fs.Workspace, "in", "f")); err != nil {
		t.Fatal(err)
	}
	// Removing a symlink removes the link only.
	if err := fs.Remove(Workspace, "secret"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(secret); err != nil {
		t.Fatal("the link's target was removed")
	}
}

func TestTmpOfStoppedSession(t *testing.T) {
	fs, _ := newFS(t)
	fs.Tmp = ""
	if _, err := fs.Open(Tmp, "x"); !errdefs.IsConflict(err) {
		t.Fatalf("open /tmp of a stopped session: %v", err)
	}
}

// TestUploadInProgressIsUnseen: while an upload fills, the folder shows
// nothing of it (a daemon killed meanwhile once left .NAME.upload-N
// there); a failed upload leaves nothing either.
func TestUploadInProgressIsUnseen(t *testing.T) {
	f, base := newFS(t)
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		_, err := f.Write(Workspace, "big.bin", pr, 1<<20)
		done <- err
	}()
	if _, err := pw.Write([]byte("half of it")); err != nil {
		t.Fatal(err)
	}
	// The write above returned: the upload has its file and is filling it.
	names := func() []string {
		ents, err := os.ReadDir(filepath.Join(base, "ws"))
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, e := range ents {
			out = append(out, e.Name())
		}
		return out
	}
	if got := names(); len(got) != 0 {
		t.Fatalf("during the upload the folder shows %v", got)
	}
	pw.CloseWithError(errors.New("client went away"))
	if err := <-done; err == nil {
		t.Fatal("a broken upload succeeded")
	}
	if got := names(); len(got) != 0 {
		t.Fatalf("after a broken upload the folder shows %v", got)
	}
	if _, err := f.Write(Workspace, "big.bin", strings.NewReader("whole"), 1<<20); err != nil {
		t.Fatal(err)
	}
	if got := names(); len(got) != 1 || got[0] != "big.bin" {
		t.Fatalf("after the upload the folder shows %v", got)
	}
}
