package isolation

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestWritePackages copies what sandboxed code left: files and folders
// come over read-only to all but root, without setuid bits; links stay
// links, none is followed out of the folder; fifos are left out.
func TestWritePackages(t *testing.T) {
	dir := t.TempDir()
	ws, dst := filepath.Join(dir, "ws"), filepath.Join(dir, "out", "packages")
	src := filepath.Join(ws, "site")
	secret := filepath.Join(dir, "secret")
	must(t, os.WriteFile(secret, []byte("host secret"), 0o600))
	must(t, os.MkdirAll(filepath.Join(src, "pkg", "sub"), 0o777))
	must(t, os.MkdirAll(filepath.Join(src, "bin"), 0o777))
	must(t, os.WriteFile(filepath.Join(src, "pkg", "__init__.py"), []byte("X = 1\n"), 0o666))
	must(t, os.WriteFile(filepath.Join(src, "bin", "tool"), []byte("#!/bin/sh\n"), 0o4777))
	must(t, os.Symlink(secret, filepath.Join(src, "pkg", "out")))
	must(t, os.Symlink("../__init__.py", filepath.Join(src, "pkg", "sub", "in")))
	must(t, syscall.Mkfifo(filepath.Join(src, "fifo"), 0o666))
	if err := WritePackages(ws, "site", dst); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]os.FileMode{
		"site/pkg":              os.ModeDir | 0o755,
		"site/pkg/__init__.py":  0o644,
		"site/bin/tool":         0o755,
		"boot/sitecustomize.py": 0o644,
		"site/pkg/out":          os.ModeSymlink | 0o777,
		"site/pkg/sub/in":       os.ModeSymlink | 0o777,
	} {
		fi, err := os.Lstat(filepath.Join(dst, name))
		if err != nil {
			t.Error(err)
			continue
		}
		if fi.Mode() != want {
			t.Errorf("%s: mode %v, want %v", name, fi.Mode(), want)
		}
	}
	if _, err := os.Lstat(filepath.Join(dst, "site", "fifo")); !os.IsNotExist(err) {
		t.Errorf("a fifo came over: %v", err)
	}
	// The link is kept as it was, not copied through: nothing of the
	// host file is in the folder.
	if target, _ := os.Readlink(filepath.Join(dst, "site", "pkg", "out")); target != secret {
		t.Errorf("link target %q", target)
	}
	b, _ := os.ReadFile(filepath.Join(dst, "boot", "sitecustomize.py"))
	if !strings.Contains(string(b), "addsitedir('"+PackagesSite+"')") {
		t.Errorf("sitecustomize:\n%s", b)
	}
	// A second write to the same folder is refused: the caller removes
	// the old one first.
	if err := WritePackages(ws, "site", dst); err == nil {
		t.Error("wrote over an existing folder")
	}
}

// TestWritePackagesLinkedSource: sandboxed code that makes the folder pip
// installed into a link to a host folder gets no copy of the host's.
func TestWritePackagesLinkedSource(t *testing.T) {
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws")
	must(t, os.MkdirAll(filepath.Join(dir, "host"), 0o755))
	must(t, os.WriteFile(filepath.Join(dir, "host", "secret"), []byte("x"), 0o600))
	must(t, os.MkdirAll(ws, 0o755))
	for _, target := range []string{filepath.Join(dir, "host"), "../host"} {
		must(t, os.RemoveAll(filepath.Join(ws, "site")))
		must(t, os.Symlink(target, filepath.Join(ws, "site")))
		out := filepath.Join(dir, "out")
		if err := WritePackages(ws, "site", out); err == nil {
			t.Errorf("link to %s: copied", target)
		}
		if _, err := os.Stat(out); !os.IsNotExist(err) {
			t.Errorf("link to %s: left a folder behind", target)
		}
		must(t, os.RemoveAll(out))
	}
	if err := WritePackages(ws, "none", filepath.Join(dir, "out")); err == nil {
		t.Error("no error for a missing folder")
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
