package sandboxfs

import (
	"archive/tar"
	"bytes"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/containerd/errdefs"
)

// TestTarRoundTrip: a folder read as a tar and unpacked elsewhere comes
// back the same (files, modes, folders, symlinks as symlinks); a symlink
// leading out of the sandbox is copied, never followed.
func TestTarRoundTrip(t *testing.T) {
	fs, base := newFS(t)
	ws := fs.Workspace
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(ws, "proj/src/deep"), 0o755))
	must(os.WriteFile(filepath.Join(ws, "proj/a.txt"), []byte("alpha"), 0o600))
	must(os.WriteFile(filepath.Join(ws, "proj/src/deep/b.py"), []byte("print(1)\n"), 0o755))
	must(os.WriteFile(filepath.Join(base, "secret"), []byte("host"), 0o600))
	must(os.Symlink(filepath.Join(base, "secret"), filepath.Join(ws, "proj/out")))
	var b bytes.Buffer
	must(fs.ReadTar(Workspace, "proj", &b))
	var names []string
	tr := tar.NewReader(bytes.NewReader(b.Bytes()))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		must(err)
		body, _ := io.ReadAll(tr)
		if strings.Contains(string(body), "host") {
			t.Fatalf("the tar holds what a symlink points to outside: %s", h.Name)
		}
		names = append(names, h.Name)
	}
	sort.Strings(names)
	if got := strings.Join(names, " "); got != "proj/ proj/a.txt proj/out proj/src/ proj/src/deep/ proj/src/deep/b.py" {
		t.Fatalf("entries %s", got)
	}
	w, err := fs.WriteTar(Tmp, "copy", bytes.NewReader(b.Bytes()), 1<<20)
	if err != nil || w.Files != 2 || w.Bytes != int64(len("alpha")+len("print(1)\n")) {
		t.Fatalf("WriteTar = %+v, %v", w, err)
	}
	got, err := os.ReadFile(filepath.Join(fs.Tmp, "copy/proj/src/deep/b.py"))
	if err != nil || string(got) != "print(1)\n" {
		t.Fatalf("b.py: %q %v", got, err)
	}
	if st, _ := os.Stat(filepath.Join(fs.Tmp, "copy/proj/src/deep/b.py")); st.Mode().Perm() != 0o755 {
		t.Errorf("mode %v", st.Mode())
	}
	if l, err := os.Readlink(filepath.Join(fs.Tmp, "copy/proj/out")); err != nil || l != filepath.Join(base, "secret") {
		t.Errorf("the symlink: %q %v", l, err)
	}
}

// TestTarRefused: entries leaving the folder are refused; a symlink in
// the sandbox where a file lands is replaced, not written through; the
// size limit holds; what is not a tar is refused.
func TestTarRefused(t *testing.T) {
	fs, base := newFS(t)
	tarOf := func(entries ...[2]string) []byte {
		var b bytes.Buffer
		tw := tar.NewWriter(&b)
		for _, e := range entries {
			_ = tw.WriteHeader(&tar.Header{Name: e[0], Mode: 0o644, Size: int64(len(e[1])), Typeflag: tar.TypeReg})
			_, _ = tw.Write([]byte(e[1]))
		}
		_ = tw.Close()
		return b.Bytes()
	}
	for _, name := range []string{"../x", "/etc/x", "a/../../x"} {
		if _, err := fs.WriteTar(Workspace, "d", bytes.NewReader(tarOf([2]string{name, "x"})), 1<<20); !errdefs.IsInvalidArgument(err) {
			t.Errorf("%s: %v", name, err)
		}
	}
	victim := filepath.Join(base, "victim")
	if err := os.WriteFile(victim, []byte("safe"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, filepath.Join(fs.Workspace, "link")); err != nil {
		t.Fatal(err)
	}
	if _, err := fs.WriteTar(Workspace, "", bytes.NewReader(tarOf([2]string{"link", "owned"})), 1<<20); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(victim); string(b) != "safe" {
		t.Fatalf("written through a symlink: %q", b)
	}
	if _, err := fs.WriteTar(Workspace, "big", bytes.NewReader(tarOf([2]string{"f", strings.Repeat("x", 100)})), 10); !errdefs.IsInvalidArgument(err) && err == nil {
		t.Fatal("over the limit")
	}
	if _, err := fs.WriteTar(Workspace, "x", strings.NewReader("not a tar at all, not at all"), 1<<20); !errdefs.IsInvalidArgument(err) {
		t.Fatalf("not a tar: %v", err)
	}
}

// TestTarMalformed: a tar stream that cannot be unpacked as it stands (a
// symlink where a folder is, a loop, a file under a file, a cut stream)
// is the client's fault, a 400 (or unpacked when it makes sense), never an
// internal error; no message names a host path.
func TestTarMalformed(t *testing.T) {
	type ent struct {
		name, link, body string
		kind             byte
	}
	long := strings.Repeat("n", 300)
	cases := []struct {
		name    string
		entries []ent
		cut     int  // bytes cut off the stream's end
		ok      bool // unpacks
	}{
		{name: "a folder then a symlink of its name", entries: []ent{
			{name: "d/", kind: tar.TypeDir}, {name: "d/f", body: "x"}, {name: "d", link: "elsewhere", kind: tar.TypeSymlink}}},
		{name: "an empty folder then a symlink of its name", entries: []ent{
			{name: "d/", kind: tar.TypeDir}, {name: "d", link: "elsewhere", kind: tar.TypeSymlink}}},
		{name: "a folder then a file of its name", entries: []ent{
			{name: "d/", kind: tar.TypeDir}, {name: "d/f", body: "x"}, {name: "d", body: "x"}}},
		{name: "a file then a folder of its name", entries: []ent{
			{name: "f", body: "x"}, {name: "f/", kind: tar.TypeDir}}},
		{name: "a file under a file", entries: []ent{{name: "f", body: "x"}, {name: "f/x", body: "x"}}},
		{name: "a symlink under a file", entries: []ent{{name: "f", body: "x"}, {name: "f/l", link: "x", kind: tar.TypeSymlink}}},
		{name: "a symlink loop", entries: []ent{{name: "a", link: "a", kind: tar.TypeSymlink}, {name: "a/x", body: "x"}}},
		{name: "a symlink loop of two", entries: []ent{
			{name: "a", link: "b", kind: tar.TypeSymlink}, {name: "b", link: "a", kind: tar.TypeSymlink}, {name: "a/d/", kind: tar.TypeDir}}},
		{name: "a symlink out", entries: []ent{{name: "a", link: "/etc", kind: tar.TypeSymlink}, {name: "a/x", body: "x"}}},
		{name: "a symlink to nothing", entries: []ent{{name: "a", kind: tar.TypeSymlink}}},
		{name: "a symlink over a symlink", ok: true, entries: []ent{
			{name: "a", link: "x", kind: tar.TypeSymlink}, {name: "a", link: "y", kind: tar.TypeSymlink}}},
		{name: "a hard link to a missing file", ok: true, entries: []ent{{name: "h", link: "missing", kind: tar.TypeLink}}},
		{name: "a path leaving the folder", entries: []ent{{name: "a/../../x", body: "x"}}},
		{name: "a name too long", entries: []ent{{name: long, body: "x"}}},
		{name: "a folder name too long", entries: []ent{{name: long + "/", kind: tar.TypeDir}}},
		{name: "a link target too long", entries: []ent{{name: "l", link: strings.Repeat("t/", 2100), kind: tar.TypeSymlink}}},
		{name: "cut inside a file", entries: []ent{{name: "f", body: strings.Repeat("x", 2000)}}, cut: 1500 + 1024},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fs, base := newFS(t)
			var b bytes.Buffer
			tw := tar.NewWriter(&b)
			for _, e := range c.entries {
				h := &tar.Header{Name: e.name, Linkname: e.link, Typeflag: e.kind, Mode: 0o644}
				if e.kind == 0 {
					h.Typeflag, h.Size = tar.TypeReg, int64(len(e.body))
				}
				if err := tw.WriteHeader(h); err != nil {
					t.Fatal(err)
				}
				_, _ = tw.Write([]byte(e.body))
			}
			_ = tw.Close()
			_, err := fs.WriteTar(Workspace, "in", bytes.NewReader(b.Bytes()[:b.Len()-c.cut]), 1<<20)
			if c.ok {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if !errdefs.IsInvalidArgument(err) {
				t.Fatalf("got %v, want an invalid argument", err)
			}
			if strings.Contains(err.Error(), base) {
				t.Errorf("the message names a host path: %v", err)
			}
			t.Log(err)
		})
	}
}
