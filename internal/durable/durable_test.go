package durable

import (
	"os"
	"path/filepath"
	"testing"
)

func TestRenameDir(t *testing.T) {
	base := t.TempDir()
	tmp, dir := filepath.Join(base, "x.new"), filepath.Join(base, "x")
	if err := os.MkdirAll(tmp, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(tmp, "f"), []byte("1"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := RenameDir(tmp, dir); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "f")); err != nil || string(b) != "1" {
		t.Fatalf("%q %v", b, err)
	}
	if err := SyncDir(filepath.Join(base, "missing")); err == nil {
		t.Fatal("a missing folder synced")
	}
}
