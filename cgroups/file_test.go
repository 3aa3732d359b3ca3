package cgroups

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestFileReadWrite(t *testing.T) {
	dir := t.TempDir()
	big := strings.Repeat("x 1\n", 300) + "oom_kill 7\n" // past the first buffer
	p := filepath.Join(dir, "memory.events")
	if err := os.WriteFile(p, []byte(big), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, err := readFile(p); err != nil || string(b) != big {
		t.Fatalf("readFile = %d bytes, %v; want %d", len(b), err, len(big))
	}
	if n, err := readKey(p, "oom_kill"); err != nil || n != 7 {
		t.Errorf("readKey = %d, %v; want 7", n, err)
	}
	if _, err := readKey(p, "oom"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("readKey of a missing key: %v, want ErrNotExist", err)
	}
	if _, err := readKey(filepath.Join(dir, "none"), "oom_kill"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("readKey of a missing file: %v, want ErrNotExist", err)
	}
	if err := writeFile(p, []byte("0")); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(p); string(b) != "0" {
		t.Errorf("after writeFile: %q", b)
	}
}
