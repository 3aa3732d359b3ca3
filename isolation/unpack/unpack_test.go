package unpack

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/containerd/errdefs"
)

// entry is one tar entry to write.
type entry struct {
	name, link, body string
	kind             byte
	mode             int64
}

func archive(t testing.TB, entries []entry) []byte {
	t.Helper()
	var b bytes.Buffer
	w := tar.NewWriter(&b)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Linkname: e.link, Typeflag: e.kind, Mode: e.mode, Size: int64(len(e.body))}
		if h.Mode == 0 {
			h.Mode = 0o644
		}
		if e.kind != tar.TypeReg {
			h.Size = 0
		}
		if err := w.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if e.kind == tar.TypeReg {
			w.Write([]byte(e.body))
		}
	}
	w.Close()
	return b.Bytes()
}

// sandbox is a folder to unpack into, inside a parent that must stay
// empty but for it: anything else there escaped.
func sandbox(t testing.TB) (parent, root string) {
	parent = t.TempDir()
	root = filepath.Join(parent, "root")
	if err := os.Mkdir(root, 0o700); err != nil {
		t.Fatal(err)
	}
	return parent, root
}

func checkContained(t testing.TB, parent string) {
	t.Helper()
	ents, _ := os.ReadDir(parent)
	if len(ents) != 1 || ents[0].Name() != "root" {
		t.Fatalf("something was written beside the root: %v", ents)
	}
	filepath.WalkDir(parent, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return nil
		}
		m := fi.Mode()
		if m&(os.ModeDevice|os.ModeCharDevice|os.ModeNamedPipe|os.ModeSocket|os.ModeSetuid|os.ModeSetgid) != 0 {
			t.Errorf("%s has mode %v", p, m)
		}
		return nil
	})
}

func TestTar(t *testing.T) {
	good := []entry{
		{name: "./", kind: tar.TypeDir, mode: 0o755},
		{name: "usr/bin/", kind: tar.TypeDir, mode: 0o755},
		{name: "usr/bin/python3", kind: tar.TypeReg, body: "#!", mode: 0o4755},
		{name: "bin", kind: tar.TypeSymlink, link: "usr/bin"},
		{name: "usr/bin/python", kind: tar.TypeLink, link: "usr/bin/python3"},
		{name: "dev/null", kind: tar.TypeChar},
		{name: "dev/fifo", kind: tar.TypeFifo},
		{name: "etc/ro/", kind: tar.TypeDir, mode: 0o555},
		{name: "etc/ro/file", kind: tar.TypeReg, body: "x"},
		{name: "tmp/", kind: tar.TypeDir, mode: 0o1777},
		{name: "/abs/file", kind: tar.TypeReg, body: "abs"},
	}
	cases := []struct {
		name    string
		entries []entry
		gzip    bool
		opts    Options
		is      func(error) bool
		check   func(t *testing.T, root string, r Result)
	}{
		{name: "a root filesystem", entries: good, check: func(t *testing.T, root string, r Result) {
			fi, err := os.Stat(filepath.Join(root, "usr/bin/python3"))
			if err != nil || fi.Mode().Perm() != 0o755 || fi.Mode()&os.ModeSetuid != 0 {
				t.Errorf("python3: %v %v (setuid must go)", fi, err)
			}
			if l, _ := os.Readlink(filepath.Join(root, "bin")); l != "usr/bin" {
				t.Errorf("bin -> %q", l)
			}
			if fi, _ := os.Stat(filepath.Join(root, "etc/ro")); fi == nil || fi.Mode().Perm() != 0o555 {
				t.Errorf("etc/ro mode: %v", fi)
			}
			if fi, _ := os.Stat(filepath.Join(root, "tmp")); fi == nil || fi.Mode()&os.ModeSticky == 0 {
				t.Errorf("tmp lost its sticky bit: %v", fi)
			}
			if b, _ := os.ReadFile(filepath.Join(root, "abs/file")); string(b) != "abs" {
				t.Errorf("absolute name not taken from the root: %q", b)
			}
			if r.Skipped != 2 || r.Bytes != 6 {
				t.Errorf("result %+v", r)
			}
		}},
		{name: "gzip", entries: good, gzip: true},
		{name: "dot-dot", entries: []entry{{name: "a/../../escape", kind: tar.TypeReg, body: "x"}}, is: errdefs.IsInvalidArgument},
		{name: "dot-dot alone", entries: []entry{{name: "..", kind: tar.TypeDir}}, is: errdefs.IsInvalidArgument},
		{name: "write through an absolute symlink", entries: []entry{
			{name: "link", kind: tar.TypeSymlink, link: "/"},
			{name: "link/escape", kind: tar.TypeReg, body: "x"},
		}, check: func(t *testing.T, root string, r Result) {
			if _, err := os.Stat(filepath.Join(root, "escape")); err != nil {
				t.Errorf("the file should land in the root: %v", err)
			}
		}},
		{name: "write through a relative symlink out", entries: []entry{
			{name: "a/link", kind: tar.TypeSymlink, link: "../../.."},
			{name: "a/link/escape", kind: tar.TypeReg, body: "x"},
		}},
		{name: "replace a symlink by a file", entries: []entry{
			{name: "f", kind: tar.TypeSymlink, link: "/etc/passwd"},
			{name: "f", kind: tar.TypeReg, body: "mine"},
		}, check: func(t *testing.T, root string, r Result) {
			if b, _ := os.ReadFile(filepath.Join(root, "f")); string(b) != "mine" {
				t.Errorf("f = %q", b)
			}
		}},
		{name: "hard link out", entries: []entry{{name: "h", kind: tar.TypeLink, link: "../../etc/passwd"}}, is: errdefs.IsInvalidArgument},
		{name: "hard link to a missing file", entries: []entry{{name: "h", kind: tar.TypeLink, link: "etc/passwd"}}, is: errdefs.IsInvalidArgument},
		{name: "too many bytes", entries: []entry{{name: "big", kind: tar.TypeReg, body: strings.Repeat("x", 100)}}, opts: Options{MaxBytes: 10}, is: tooLargeErr},
		{name: "too many entries", entries: good, opts: Options{MaxEntries: 3}, is: tooLargeErr},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := archive(t, c.entries)
			if c.gzip {
				var z bytes.Buffer
				zw := gzip.NewWriter(&z)
				zw.Write(b)
				zw.Close()
				b = z.Bytes()
			}
			parent, root := sandbox(t)
			r, err := Tar(context.Background(), bytes.NewReader(b), root, c.opts)
			checkContained(t, parent)
			if c.is != nil {
				if !c.is(err) {
					t.Fatalf("got %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.check != nil {
				c.check(t, root, r)
			}
		})
	}
}

func TestTarGarbage(t *testing.T) {
	for _, b := range [][]byte{[]byte("not a tarball at all, but long enough to look at....."), {0x1f, 0x8b, 1, 2, 3}} {
		_, root := sandbox(t)
		if _, err := Tar(context.Background(), bytes.NewReader(b), root, Options{}); !errdefs.IsInvalidArgument(err) {
			t.Errorf("%q: %v", b, err)
		}
	}
}

// FuzzTar feeds arbitrary archives: nothing may land outside the root,
// no device, fifo, socket, setuid or setgid file may appear, and no error
// names the host folder.
func FuzzTar(f *testing.F) {
	f.Add(archive(f, []entry{{name: "a/../../x", kind: tar.TypeReg, body: "x"}}))
	f.Add(archive(f, []entry{{name: "l", kind: tar.TypeSymlink, link: "/"}, {name: "l/x", kind: tar.TypeReg, body: "x"}}))
	f.Add(archive(f, []entry{{name: "l", kind: tar.TypeSymlink, link: ".."}, {name: "l/l2", kind: tar.TypeSymlink, link: ".."}, {name: "l/l2/x", kind: tar.TypeDir}}))
	f.Add(archive(f, []entry{{name: "d", kind: tar.TypeDir, mode: 0o6777}, {name: "d/h", kind: tar.TypeLink, link: "../x"}}))
	f.Add(archive(f, []entry{{name: "dev", kind: tar.TypeBlock}, {name: "s", kind: tar.TypeReg, mode: 0o6755}}))
	f.Add(archive(f, []entry{{name: "a", kind: tar.TypeSymlink, link: "a"}, {name: "a/x", kind: tar.TypeReg, body: "x"}}))
	f.Add(archive(f, []entry{{name: "f", kind: tar.TypeReg, body: "x"}, {name: "f/d", kind: tar.TypeDir}}))
	f.Fuzz(func(t *testing.T, b []byte) {
		// Not t.TempDir: in a fuzz worker its cleanup crawls.
		parent, err := os.MkdirTemp("", "unpack-fuzz")
		if err != nil {
			t.Fatal(err)
		}
		defer os.RemoveAll(parent)
		root := filepath.Join(parent, "root")
		if err := os.Mkdir(root, 0o700); err != nil {
			t.Fatal(err)
		}
		_, err = Tar(context.Background(), bytes.NewReader(b), root, Options{MaxBytes: 1 << 20, MaxEntries: 1000})
		checkContained(t, parent)
		if err != nil && strings.Contains(err.Error(), parent) {
			t.Fatalf("the error names the host folder: %v", err)
		}
	})
}

// TestTarMalformed: archives a careless or hostile client sends are its
// fault (400, or unpacked when they make sense), never internal, and no
// message names the host folder being filled (it lies in the data dir).
func TestTarMalformed(t *testing.T) {
	long := strings.Repeat("n", 300)
	cases := []struct {
		name    string
		entries []entry
		cut     int  // bytes cut off the archive's end
		ok      bool // unpacks
	}{
		{name: "symlink loop", entries: []entry{
			{name: "a", kind: tar.TypeSymlink, link: "a"},
			{name: "a/x", kind: tar.TypeReg, body: "x"},
		}},
		{name: "symlink loop of two", entries: []entry{
			{name: "a", kind: tar.TypeSymlink, link: "b"},
			{name: "b", kind: tar.TypeSymlink, link: "a/c"},
			{name: "a/x/y", kind: tar.TypeDir},
		}},
		{name: "a folder then a symlink of its name", ok: true, entries: []entry{
			{name: "d/", kind: tar.TypeDir},
			{name: "d/f", kind: tar.TypeReg, body: "x"},
			{name: "d", kind: tar.TypeSymlink, link: "elsewhere"},
		}},
		{name: "a file under a file", entries: []entry{
			{name: "f", kind: tar.TypeReg, body: "x"},
			{name: "f/x", kind: tar.TypeReg, body: "x"},
		}},
		{name: "a folder under a file", entries: []entry{
			{name: "f", kind: tar.TypeReg, body: "x"},
			{name: "f/d/", kind: tar.TypeDir},
		}},
		{name: "a hard link to a missing file", entries: []entry{{name: "h", kind: tar.TypeLink, link: "missing"}}},
		{name: "a hard link to a folder", entries: []entry{{name: "d/", kind: tar.TypeDir}, {name: "h", kind: tar.TypeLink, link: "d"}}},
		{name: "a hard link to a symlink", entries: []entry{{name: "l", kind: tar.TypeSymlink, link: "/etc/passwd"}, {name: "h", kind: tar.TypeLink, link: "l"}}},
		{name: "a hard link through a loop", entries: []entry{{name: "a", kind: tar.TypeSymlink, link: "a"}, {name: "h", kind: tar.TypeLink, link: "a/x"}}},
		{name: "a path leaving the root", entries: []entry{{name: "../../x", kind: tar.TypeReg, body: "x"}}},
		{name: "a name too long", entries: []entry{{name: long, kind: tar.TypeReg, body: "x"}}},
		{name: "a folder name too long", entries: []entry{{name: long + "/x", kind: tar.TypeReg, body: "x"}}},
		{name: "a link target too long", entries: []entry{{name: "l", kind: tar.TypeSymlink, link: strings.Repeat("t/", 2100)}}},
		{name: "cut inside a file", entries: []entry{{name: "f", kind: tar.TypeReg, body: strings.Repeat("x", 2000)}}, cut: 1500 + 1024},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := archive(t, c.entries)
			b = b[:len(b)-c.cut]
			parent, root := sandbox(t)
			_, err := Tar(context.Background(), bytes.NewReader(b), root, Options{})
			checkContained(t, parent)
			if c.ok {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if !errdefs.IsInvalidArgument(err) {
				t.Fatalf("got %v, want an invalid argument", err)
			}
			if strings.Contains(err.Error(), parent) {
				t.Errorf("the message names the host folder: %v", err)
			}
			t.Log(err)
		})
	}
}

func tooLargeErr(err error) bool { return errors.Is(err, ErrTooLarge) }
