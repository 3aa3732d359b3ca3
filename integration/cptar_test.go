package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCopyFolders: sandboxctl cp -r sends a folder into a session and
// brings one back whole (files, modes, nested folders, symlinks as
// symlinks); a symlink the sandbox made to a host path comes back as a
// symlink, its target never read.
func TestCopyFolders(t *testing.T) {
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
