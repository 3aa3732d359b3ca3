package integration

import (
	"archive/tar"
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/containerd/errdefs"
)

// TestCopyFolders: sandboxctl cp -r sends a folder into a session and
// brings one back whole (files, modes, nested folders, symlinks as
// symlinks); a symlink the sandbox made to a host path comes back as a
// symlink, its target never read.
func TestCopyFolders(t *testing.T) {
	t.Parallel()
	hostOnly(t) // the files API is the daemon's, the same on v2
	d := startDaemon(t, "")
	id := d.session(t, nil)
	src := filepath.Join(t.TempDir(), "project")
	for name, body := range map[string]string{"main.py": "print('hi')\n", "lib/util.py": "X = 1\n", "lib/deep/data.csv": "a,b\n1,2\n"} {
		p := filepath.Join(src, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("lib/util.py", filepath.Join(src, "link.py")); err != nil {
		t.Fatal(err)
	}
	if out, stderr, code := d.ctl(t, "", "cp", "-r", src, id+":."); code != 0 {
		t.Fatalf("cp -r to the session: %d %q %q", code, out, stderr)
	}
	if e := d.sh(t, id, "cd /workspace/project && find . | sort && cat lib/deep/data.csv && readlink link.py && python3 main.py"); e.ExitCode != 0 ||
		e.Stdout != ".\n./lib\n./lib/deep\n./lib/deep/data.csv\n./lib/util.py\n./link.py\n./main.py\na,b\n1,2\nlib/util.py\nhi\n" {
		t.Fatalf("in the session: %+v", e)
	}
	d.sh(t, id, "ln -s /etc/shadow /workspace/project/shadow; mkdir -p /workspace/project/out && echo 42 > /workspace/project/out/r.txt")
	back := t.TempDir()
	if out, stderr, code := d.ctl(t, "", "cp", "-r", id+":project", back); code != 0 {
		t.Fatalf("cp -r from the session: %d %q %q", code, out, stderr)
	}
	if b, err := os.ReadFile(filepath.Join(back, "project/out/r.txt")); err != nil || string(b) != "42\n" {
		t.Fatalf("r.txt: %q %v", b, err)
	}
	if b, err := os.ReadFile(filepath.Join(back, "project/lib/deep/data.csv")); err != nil || string(b) != "a,b\n1,2\n" {
		t.Fatalf("data.csv: %q %v", b, err)
	}
	if l, err := os.Readlink(filepath.Join(back, "project/shadow")); err != nil || l != "/etc/shadow" {
		t.Fatalf("the sandbox's symlink: %q %v", l, err)
	}
	if _, stderr, code := d.ctl(t, "", "cp", id+":project", filepath.Join(back, "x")); code != 125 || !strings.Contains(stderr, "-r") {
		t.Fatalf("cp of a folder without -r: %d %q", code, stderr)
	}
}

// TestBadArchives: a tar stream (cp -r) or a root filesystem (template
// import) that cannot be unpacked as it stands is a 400 that names no host
// folder, never a 500: a folder then a symlink of its name ("file
// exists"), a symlink loop ("too many levels of symbolic links"), a
// stream cut inside a file.
func TestBadArchives(t *testing.T) {
	t.Parallel()
	hostOnly(t)
	d := startDaemon(t, "")
	id := d.session(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	type ent struct{ name, link, body string }
	tarOf := func(cut int, entries ...ent) []byte {
		var b bytes.Buffer
		tw := tar.NewWriter(&b)
		for _, e := range entries {
			h := &tar.Header{Name: e.name, Mode: 0o644, Typeflag: tar.TypeReg, Size: int64(len(e.body))}
			switch {
			case e.link != "":
				h.Typeflag, h.Linkname, h.Size = tar.TypeSymlink, e.link, 0
			case strings.HasSuffix(e.name, "/"):
				h.Typeflag, h.Mode = tar.TypeDir, 0o755
			}
			if err := tw.WriteHeader(h); err != nil {
				t.Fatal(err)
			}
			_, _ = tw.Write([]byte(e.body))
		}
		_ = tw.Close()
		return b.Bytes()[:b.Len()-cut]
	}
	check := func(t *testing.T, err error) {
		t.Helper()
		if !errdefs.IsInvalidArgument(err) {
			t.Fatalf("got %v, want a 400", err)
		}
		if strings.Contains(err.Error(), d.base) {
			t.Errorf("the message names a host folder: %v", err)
		}
	}
	for _, tc := range []struct {
		name string
		tar  []byte
	}{
		{"a folder then a symlink of its name", tarOf(0, ent{name: "d/"}, ent{name: "d/f", body: "x"}, ent{name: "d", link: "elsewhere"})},
		{"a symlink loop", tarOf(0, ent{name: "a", link: "a"}, ent{name: "a/x", body: "x"})},
		{"a file under a file", tarOf(0, ent{name: "f", body: "x"}, ent{name: "f/x", body: "x"})},
		{"cut inside a file", tarOf(1500+1024, ent{name: "f", body: strings.Repeat("x", 2000)})},
	} {
		t.Run("cp: "+tc.name, func(t *testing.T) {
			_, err := d.c.PutTar(ctx, id, "in-"+strings.ReplaceAll(tc.name, " ", "-"), bytes.NewReader(tc.tar))
			check(t, err)
		})
		t.Run("import: "+tc.name, func(t *testing.T) {
			_, err := d.c.ImportRootfs(ctx, "bad-archive", bytes.NewReader(tc.tar))
			if tc.name == "a folder then a symlink of its name" {
				// A root filesystem's later entry replaces an earlier one.
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			check(t, err)
		})
	}
}
