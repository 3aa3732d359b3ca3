package sandboxfs

import (
	"archive/tar"
	"bytes"
	"context"
	"io"
	"strings"
	"testing"

	"github.com/containerd/errdefs"
)

// TestFilesServeTheAPI drives the file calls the router makes, over one
// session's folders and a resolver that knows only session "s1".
func TestFilesServeTheAPI(t *testing.T) {
	t.Parallel()
	fs, _ := newFS(t)
	fl := &Files{
		Of: func(_ context.Context, id string) (*FS, error) {
			if id != "s1" {
				return nil, errdefs.ErrNotFound.WithMessage("session " + id + " not found")
			}
			return fs, nil
		},
		MaxUpload: 16,
	}
	ctx := context.Background()

	w, err := fl.PutFile(ctx, "s1", "/workspace/d/a.txt", strings.NewReader("hello"))
	if err != nil || w.Path != "/workspace/d/a.txt" || w.Size != 5 {
		t.Fatalf("PutFile = %+v, %v", w, err)
	}
	if _, err := fl.PutFile(ctx, "s1", "/workspace/big", strings.NewReader(strings.Repeat("x", 17))); err == nil {
		t.Error("PutFile took more than MaxUpload")
	}
	if _, err := fl.PutFile(ctx, "s2", "/workspace/a", strings.NewReader("x")); !errdefs.IsNotFound(err) {
		t.Errorf("PutFile to an unknown session: %v, want not found", err)
	}
	if _, err := fl.PutFile(ctx, "s1", "/etc/passwd", strings.NewReader("x")); !errdefs.IsInvalidArgument(err) {
		t.Errorf("PutFile outside the served folders: %v, want invalid argument", err)
	}

	f, list, err := fl.OpenFile(ctx, "s1", "/workspace/d/a.txt")
	if err != nil || list != nil {
		t.Fatalf("OpenFile of a file = %v, %v", list, err)
	}
	b, _ := io.ReadAll(f)
	f.Close()
	if string(b) != "hello" {
		t.Errorf("read %q", b)
	}
	f, list, err = fl.OpenFile(ctx, "s1", "/workspace/d")
	if err != nil || f != nil || list == nil || len(list.Entries) != 1 || list.Entries[0].Name != "a.txt" {
		t.Fatalf("OpenFile of a folder = %v, %+v, %v", f, list, err)
	}

	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	_ = tw.WriteHeader(&tar.Header{Name: "t.txt", Mode: 0o644, Size: 2, Typeflag: tar.TypeReg})
	_, _ = tw.Write([]byte("hi"))
	_ = tw.Close()
	if w, err := fl.PutTar(ctx, "s1", "/tmp/x", &buf); err != nil || w.Files != 1 || w.Size != 2 {
		t.Fatalf("PutTar = %+v, %v", w, err)
	}
	buf.Reset()
	if err := fl.GetTar(ctx, "s1", "/tmp/x", &buf); err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(&buf)
	var names []string
	for h, err := tr.Next(); err == nil; h, err = tr.Next() {
		names = append(names, h.Name)
	}
	if !strings.Contains(strings.Join(names, " "), "t.txt") {
		t.Errorf("GetTar wrote %v", names)
	}

	if err := fl.DeleteFile(ctx, "s1", "/workspace/d"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := fl.OpenFile(ctx, "s1", "/workspace/d/a.txt"); !errdefs.IsNotFound(err) {
		t.Errorf("OpenFile after DeleteFile: %v, want not found", err)
	}
}
