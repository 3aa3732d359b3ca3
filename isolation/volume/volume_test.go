package volume

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/moby/sys/mountinfo"
	"golang.org/x/sys/unix"
)

func TestLoopVolume(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "s1")
	t.Cleanup(func() { _ = Remove(dir) })
	if err := Ensure(ctx, Loop, nil, dir, MinBytes); err != nil {
		t.Fatal(err)
	}
	if ok, _ := mountinfo.Mounted(Root(dir)); !ok {
		t.Fatal("not mounted")
	}
	// Root too is bound by the size: no blocks are reserved for it.
	big := make([]byte, 1<<20)
	f, err := os.Create(filepath.Join(Workspace(dir), "fill"))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 32 && err == nil; i++ {
		_, err = f.Write(big)
	}
	f.Close()
	if !errors.Is(err, unix.ENOSPC) {
		t.Fatalf("writing past the size: %v", err)
	}
	used, size, err := Usage(Loop, dir)
	if err != nil || size > MinBytes || size < MinBytes*8/10 || used < size-(1<<20) {
		t.Fatalf("usage %d of %d: %v", used, size, err)
	}
	// Idempotent, and a remount (as after a reboot) keeps the files.
	if err := Ensure(ctx, Loop, nil, dir, MinBytes); err != nil {
		t.Fatal(err)
	}
	if err := Unmount(dir); err != nil {
		t.Fatal(err)
	}
	if ok, _ := mountinfo.Mounted(Root(dir)); ok {
		t.Fatal("still mounted")
	}
	if err := Ensure(ctx, Loop, nil, dir, MinBytes); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(Workspace(dir), "fill")); err != nil {
		t.Fatalf("files after a remount: %v", err)
	}
	if err := Remove(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("left after Remove: %v", err)
	}
	if err := Remove(dir); err != nil {
		t.Fatalf("Remove of nothing: %v", err)
	}
}

func TestPlainVolume(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "s2")
	if err := Ensure(context.Background(), Plain, nil, dir, MinBytes); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(Workspace(dir), "f"), make([]byte, 100000), 0o600); err != nil {
		t.Fatal(err)
	}
	used, size, err := Usage(Plain, dir)
	if err != nil || size != 0 || used < 100000 {
		t.Fatalf("usage %d of %d: %v", used, size, err)
	}
	if err := Remove(dir); err != nil {
		t.Fatal(err)
	}
}
