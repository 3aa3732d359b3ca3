package integration

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/containerd/errdefs"

	"github.com/sandboxd/sandboxd/api"
)

// TestTemplates covers templates on the host's root filesystem: preload,
// environment, default limits, a warm pool of their own, the errors, who
// may do what, and that they outlive the daemon.
func TestTemplates(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, "pool_max_total = 4\n")
	ctx := context.Background()

	list, err := d.c.Templates(ctx)
	if err != nil || len(list) != 1 || list[0].Name != "python" || !list[0].Builtin || list[0].Rootfs != api.RootfsHost {
		t.Fatalf("the python template always exists: %+v %v", list, err)
	}

	// Added from sandboxctl, with everything a template has.
	out, stderr, code := d.ctl(t, "", "template", "add", "data", "--json", "--description", "json and csv ready",
		"--preload", "import json, csv\nTABLE = {'rows': 3}", "-e", "GREETING=hello", "-e", "MODE=template",
		"--memory", "128M", "--pids", "64", "--pool-size", "1")
	if code != 0 {
		t.Fatalf("template add: %s %d", stderr, code)
	}
	var tmpl api.Template
	if err := json.Unmarshal([]byte(out), &tmpl); err != nil || tmpl.Name != "data" || *tmpl.Limits.MemoryMB != 128 || *tmpl.Limits.Pids != 64 || *tmpl.PoolSize != 1 {
		t.Fatalf("template add answered %q %v", out, err)
	}
	waitFor(t, func() bool {
		got, err := d.c.Template(ctx, "data")
		return err == nil && got.PoolIdle == 1
	})
	info, err := d.c.Info(ctx)
	if err != nil || info.Pool.Templates["data"] != (api.PoolFill{Size: 1, Target: 1, Idle: 1}) {
		t.Fatalf("info.pool: %+v %v", info.Pool, err)
	}

	// A session of it: claimed from its pool, preload done, its env under
	// the session's own, its limits unless the session asks for others.
	s, err := d.c.CreateSession(ctx, &api.CreateSessionRequest{Template: "data", Env: map[string]string{"MODE": "session"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.c.DeleteSession(ctx, s.ID) })
	if s.Template != "data" || s.Limits.MemoryMB != 128 || s.Limits.Pids != 64 {
		t.Fatalf("session of the template: %+v", s)
	}
	e := d.py(t, s.ID, "import os\nprint(TABLE['rows'], json.dumps([1]), os.environ['GREETING'], os.environ['MODE'])\nsorted(os.listdir('/workspace')), os.listdir('/tmp')")
	if e.Status != api.StatusOK || strings.TrimSpace(e.Stdout) != "3 [1] hello session" || result(e) != "([], [])" {
		t.Fatalf("preload, env and a clean sandbox: %+v", e)
	}
	if e := d.sh(t, s.ID, "cat /sys/fs/cgroup/memory.max 2>/dev/null || echo $GREETING"); e.Status != api.StatusOK {
		t.Fatalf("shell in a template's session: %+v", e)
	}
	// The preload runs again after a state reset.
	if e := d.py(t, s.ID, "import os; os._exit(3)"); !e.StateReset && e.Status != api.StatusError {
		t.Fatalf("exit: %+v", e)
	}
	if e := d.py(t, s.ID, "TABLE['rows']"); result(e) != "3" {
		t.Fatalf("preload after a state reset: %+v", e)
	}
	big, err := d.c.CreateSession(ctx, &api.CreateSessionRequest{Template: "data", MemoryMB: ptr(int64(256))})
	if err != nil || big.Limits.MemoryMB != 256 || big.Limits.Pids != 64 {
		t.Fatalf("request limits over the template's: %+v %v", big, err)
	}
	_ = d.c.DeleteSession(ctx, big.ID)

	// Errors, each with the contract's code and a reason.
	cases := []struct {
		name string
		req  api.Template
		is   func(error) bool
		says string
	}{
		{"exists", api.Template{Name: "data"}, errdefs.IsConflict, "exists"},
		{"python is taken", api.Template{Name: "python"}, errdefs.IsConflict, "exists"},
		{"bad name", api.Template{Name: "../x"}, errdefs.IsInvalidArgument, "bad template name"},
		{"preload fails", api.Template{Name: "broken", Preload: "import no_such_module_here"}, errdefs.IsInvalidArgument, "No module named 'no_such_module_here'"},
		{"preload hangs up", api.Template{Name: "exits", Preload: "import os; os._exit(1)"}, errdefs.IsInvalidArgument, "cannot start"},
		{"bad limits", api.Template{Name: "huge", Limits: &api.LimitDefaults{MemoryMB: ptr(int64(1 << 40))}}, errdefs.IsInvalidArgument, "memory_mb"},
		{"bad env", api.Template{Name: "env", Env: map[string]string{"A=B": "1"}}, errdefs.IsInvalidArgument, "environment variable"},
		{"pools too big", api.Template{Name: "pool", PoolSize: ptr(10)}, errdefs.IsResourceExhausted, "pool_max_total"},
		{"rootfs missing", api.Template{Name: "gone", Rootfs: "/nonexistent/rootfs"}, errdefs.IsInvalidArgument, "no such file"},
		{"rootfs is /", api.Template{Name: "slash", Rootfs: "/"}, errdefs.IsInvalidArgument, "whole host"},
		{"rootfs in the state", api.Template{Name: "state", Rootfs: filepath.Join(d.base, "data", "sessions")}, errdefs.IsInvalidArgument, "overlaps"},
		{"rootfs not root's", api.Template{Name: "mine", Rootfs: userDir(t)}, errdefs.IsInvalidArgument, "root alone"},
		{"rootfs without python", api.Template{Name: "nopy", Rootfs: emptyRoot(t)}, errdefs.IsInvalidArgument, "no python3"},
	}
	for _, c := range cases {
		_, err := d.c.AddTemplate(ctx, &c.req)
		if !c.is(err) || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s: got %v, want a %q error", c.name, err, c.says)
		}
	}
	if _, err := d.c.CreateSession(ctx, &api.CreateSessionRequest{Template: "broken"}); !errdefs.IsNotFound(err) {
		t.Errorf("a refused template is not there: %v", err)
	}
	if _, err := d.c.CreateSession(ctx, &api.CreateSessionRequest{Template: "nope"}); !errdefs.IsNotFound(err) || !strings.Contains(err.Error(), "template ls") {
		t.Errorf("no such template: %v", err)
	}
	if err := d.c.DeleteTemplate(ctx, "python"); !errdefs.IsConflict(err) {
		t.Errorf("remove python: %v", err)
	}
	if err := d.c.DeleteTemplate(ctx, "data"); !errdefs.IsConflict(err) || !strings.Contains(err.Error(), "used by 1 session") {
		t.Errorf("remove a template in use: %v", err)
	}

	// Another user may use templates and add ones on the host's root, but
	// not name a folder, import, or remove what is not theirs.
	if err := os.Chmod(d.socket, 0o666); err != nil {
		t.Fatal(err)
	}
	alice := otherUser
	if _, stderr, code := runCtl(t, d.socket, alice, "", "template", "add", "alices", "--rootfs", emptyRoot(t)); code == 0 || !strings.Contains(stderr, "only root") {
		t.Errorf("alice names a folder: %q %d", stderr, code)
	}
	if _, stderr, code := runCtl(t, d.socket, alice, "", "template", "rm", "data"); code == 0 || !strings.Contains(stderr, "belongs to uid 0") {
		t.Errorf("alice removes root's template: %q %d", stderr, code)
	}
	if _, stderr, code := runCtl(t, d.socket, alice, "tar", "template", "import", "alices", "-"); code == 0 || !strings.Contains(stderr, "only root") {
		t.Errorf("alice imports: %q %d", stderr, code)
	}
	if _, stderr, code := runCtl(t, d.socket, alice, "", "template", "add", "alices", "--preload", "X = 1"); code != 0 {
		t.Errorf("alice adds a template: %q %d", stderr, code)
	}
	out, _, _ = runCtl(t, d.socket, alice, "", "run", "--template", "alices", "-c", "print(X)")
	if strings.TrimSpace(out) != "1" {
		t.Errorf("alice runs her template: %q", out)
	}

	// Templates, and sessions of them, outlive the daemon.
	d.terminate()
	d.launch()
	out, _, _ = d.ctl(t, "", "template", "ls", "-q")
	if strings.Fields(out)[0] != "54321/alices" || !strings.Contains(out, "data") || !strings.Contains(out, "python") {
		t.Fatalf("templates after a restart: %q", out)
	}
	if e := d.py(t, s.ID, "import os\nTABLE['rows'], os.environ['MODE']"); result(e) != "(3, 'session')" {
		t.Fatalf("the session after a restart: %+v", e)
	}
	if err := os.Chmod(d.socket, 0o666); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := runCtl(t, d.socket, alice, "", "template", "rm", "alices"); code != 0 {
		t.Errorf("alice removes her template: %q %d", stderr, code)
	}
	if err := d.c.DeleteSession(ctx, s.ID); err != nil {
		t.Fatal(err)
	}
	if out, stderr, code := d.ctl(t, "", "template", "rm", "data"); code != 0 || strings.TrimSpace(out) != "data" {
		t.Fatalf("template rm: %q %q %d", out, stderr, code)
	}
	if _, err := d.c.Template(ctx, "data"); !errdefs.IsNotFound(err) {
		t.Fatalf("a removed template: %v", err)
	}
	waitFor(t, func() bool {
		info, err := d.c.Info(ctx)
		return err == nil && info.Pool.Size == 0 && info.Pool.Idle == 0
	})
}

// TestTemplateImport imports a root filesystem tarball with sandboxctl
// and runs sessions in it; hostile tarballs are refused and leave nothing.
func TestTemplateImport(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, "")
	ctx := context.Background()
	tarball := rootfsTarball(t)

	_, stderr, code := d.ctl(t, "", "template", "import", "mini", tarball, "--preload", "import json", "--memory", "128M", "--pool-size", "1")
	if code != 0 {
		t.Fatalf("import: %s (%d)\n%s", stderr, code, d.log())
	}
	if !strings.Contains(stderr, "device nodes") {
		t.Errorf("import says what it unpacked: %q", stderr)
	}
	tm, err := d.c.Template(ctx, "mini")
	if err != nil || tm.Rootfs != filepath.Join(d.base, "data", "templates", "mini", "rootfs") {
		t.Fatalf("imported template: %+v %v", tm, err)
	}
	id := d.session(t, &api.CreateSessionRequest{Template: "mini"})
	e := d.py(t, id, `import sys, os
print(open('/etc/os-release').read().strip())
print(sys.executable, os.path.exists('/usr/bin/apt'), os.path.exists('/root'), json.dumps(1))
print(os.stat('/dev/null').st_mode & 0o170000 == 0o020000, os.path.exists('/escaped'))`)
	want := "ID=sandboxd-test-image\n/usr/local/bin/python3 False False 1\nTrue False"
	if e.Status != api.StatusOK || strings.TrimSpace(e.Stdout) != want {
		t.Fatalf("inside the image: %+v", e)
	}
	if e := d.sh(t, id, "echo from $0 && id -un"); strings.TrimSpace(e.Stdout) != "from /bin/sh\nsandbox" {
		t.Fatalf("shell inside the image: %+v", e)
	}
	if e := d.py(t, id, "open('/usr/local/bin/new', 'w')"); e.Status != api.StatusError || !strings.Contains(e.Stderr, "Read-only") {
		t.Fatalf("the image is read-only: %+v", e)
	}
	if _, err := os.Stat("/escaped"); err == nil {
		t.Fatal("the tarball wrote outside its root")
	}

	// A second import under the name is refused while the template exists.
	f, _ := os.Open(tarball)
	_, err = d.c.ImportRootfs(ctx, "mini", f)
	f.Close()
	if !errdefs.IsConflict(err) {
		t.Fatalf("import over a template: %v", err)
	}

	// Hostile or useless tarballs.
	for _, c := range []struct {
		name    string
		entries []tarEntry
		says    string
	}{
		{"escape", []tarEntry{{name: "../../escaped", body: "x"}}, "leaves the root filesystem"},
		{"hard link out", []tarEntry{{name: "h", link: "../../../etc/shadow", kind: tar.TypeLink}}, "leaves the root filesystem"},
		{"not a tarball", nil, "not a tar archive"},
		{"no python", []tarEntry{{name: "etc/hostname", body: "x"}}, "no python3"},
	} {
		var body io.Reader = strings.NewReader("this is not a tarball, not even close; it is long enough to be read as one")
		if c.entries != nil {
			body = tarOf(t, c.entries)
		}
		imp, err := d.c.ImportRootfs(ctx, "bad", body)
		if err == nil {
			_, err = d.c.AddTemplate(ctx, &api.Template{Name: "bad", Rootfs: imp.Rootfs})
			_ = d.c.DeleteTemplate(ctx, "bad")
		}
		if !errdefs.IsInvalidArgument(err) || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s: %v", c.name, err)
		}
	}
	if _, err := os.Stat("/escaped"); err == nil {
		os.Remove("/escaped")
		t.Fatal("a tarball wrote outside its root")
	}
	if ents, _ := os.ReadDir(filepath.Join(d.base, "data", "templates")); len(ents) != 1 {
		t.Errorf("refused imports left folders: %v", ents)
	}
	// A failed add from sandboxctl removes what it imported.
	noPy := filepath.Join(t.TempDir(), "nopy.tar")
	if err := os.WriteFile(noPy, readAll(t, tarOf(t, []tarEntry{{name: "etc/hostname", body: "x"}})), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := d.ctl(t, "", "template", "import", "nopy", noPy); code == 0 || !strings.Contains(stderr, "no python3") {
		t.Errorf("import without python: %q %d", stderr, code)
	}
	if _, err := os.Stat(filepath.Join(d.base, "data", "templates", "nopy")); err == nil {
		t.Error("a failed import left its files")
	}

	if err := d.c.DeleteSession(ctx, id); err != nil {
		t.Fatal(err)
	}
	if err := d.c.DeleteTemplate(ctx, "mini"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(d.base, "data", "templates", "mini")); err == nil {
		t.Error("the removed template's root filesystem is left")
	}
}

func ptr[T any](v T) *T { return &v }

type tarEntry struct {
	name, link, body string
	kind             byte
}

func tarOf(t *testing.T, entries []tarEntry) io.Reader {
	t.Helper()
	pr, pw := io.Pipe()
	go func() {
		w := tar.NewWriter(pw)
		for _, e := range entries {
			kind := e.kind
			if kind == 0 {
				kind = tar.TypeReg
			}
			h := &tar.Header{Name: e.name, Linkname: e.link, Typeflag: kind, Mode: 0o644}
			if kind == tar.TypeReg {
				h.Size = int64(len(e.body))
			}
			_ = w.WriteHeader(h)
			_, _ = w.Write([]byte(e.body))
		}
		pw.CloseWithError(w.Close())
	}()
	return pr
}

func readAll(t *testing.T, r io.Reader) []byte {
	t.Helper()
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// shared holds files several tests read and none changes, each written
// once, by the first test that needs it, and removed after the run.
var shared sharedFiles

type sharedFiles struct {
	sync.Mutex
	dir    string
	rootfs string // rootfsTarball's
}

func (s *sharedFiles) remove() {
	s.Lock()
	defer s.Unlock()
	if s.dir != "" {
		os.RemoveAll(s.dir)
	}
}

// rootfsTarball is writeRootfsTarball's tarball, written once for the
// tests that import it (~60 MB of the host's Python to read and compress).
func rootfsTarball(t *testing.T) string {
	t.Helper()
	shared.Lock()
	defer shared.Unlock()
	if shared.rootfs != "" {
		return shared.rootfs
	}
	if shared.dir == "" {
		dir, err := os.MkdirTemp("", "sandboxd-shared-")
		if err != nil {
			t.Fatal(err)
		}
		shared.dir = dir
	}
	path := filepath.Join(shared.dir, "rootfs.tar.gz")
	writeRootfsTarball(t, path) // a test that fails here leaves it to the next
	shared.rootfs = path
	return path
}

// writeRootfsTarball tars up a minimal root filesystem from the host: its
// python3 (at /usr/local/bin, as official Python images have it), the
// standard library, the libraries they load, and dash as /bin/sh; plus a
// marker /etc/os-release, a device node (to be left out) and an entry
// that tries to leave the root through a symlink (to land inside it).
func writeRootfsTarball(t *testing.T, path string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	// The fastest level: the tarball is read back at once, on this host.
	zw, _ := gzip.NewWriterLevel(f, gzip.BestSpeed)
	w := tar.NewWriter(zw)
	tw := &treeWriter{t: t, w: w, seen: map[string]bool{}}
	python, err := filepath.EvalSymlinks("/usr/bin/python3")
	if err != nil {
		t.Fatal(err)
	}
	stdlib := filepath.Dir(filepath.Join("/usr/lib", filepath.Base(python), "os.py"))
	tw.path(python)
	tw.path("/bin/sh")
	tw.path("/usr/bin/id")
	for _, bin := range []string{python, "/bin/sh", "/usr/bin/id", filepath.Join(stdlib, "lib-dynload")} {
		for _, lib := range sharedLibs(t, bin) {
			tw.path(lib)
		}
	}
	tw.tree(stdlib)
	tw.header(&tar.Header{Name: "usr/local/bin/", Typeflag: tar.TypeDir, Mode: 0o755})
	tw.header(&tar.Header{Name: "usr/local/bin/python3", Typeflag: tar.TypeSymlink, Linkname: python})
	tw.file("etc/os-release", "ID=sandboxd-test-image\n", 0o644)
	tw.header(&tar.Header{Name: "dev/null", Typeflag: tar.TypeChar, Mode: 0o666, Devmajor: 1, Devminor: 3})
	tw.header(&tar.Header{Name: "up", Typeflag: tar.TypeSymlink, Linkname: "../../../../../.."})
	tw.file("up/escaped", "x", 0o644)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
}

// sharedLibs are the libraries a binary (or every .so in a folder) loads,
// as ldd lists them.
func sharedLibs(t *testing.T, path string) []string {
	t.Helper()
	files := []string{path}
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		files, _ = filepath.Glob(filepath.Join(path, "*.so"))
	}
	var libs []string
	for _, f := range files {
		out, _ := exec.Command("ldd", f).Output()
		for _, line := range strings.Split(string(out), "\n") {
			for _, field := range strings.Fields(line) {
				if strings.HasPrefix(field, "/") {
					libs = append(libs, field)
				}
			}
		}
	}
	return libs
}

// treeWriter writes host files into a tarball under their own paths, with
// every symlink on the way, so that they resolve inside the image as on
// the host.
type treeWriter struct {
	t    *testing.T
	w    *tar.Writer
	seen map[string]bool
}

func (tw *treeWriter) header(h *tar.Header) {
	if err := tw.w.WriteHeader(h); err != nil {
		tw.t.Fatal(err)
	}
}

func (tw *treeWriter) file(name, body string, mode int64) {
	tw.header(&tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: mode, Size: int64(len(body))})
	if _, err := tw.w.Write([]byte(body)); err != nil {
		tw.t.Fatal(err)
	}
}

// path adds the host path p: its parent folders and symlinks first, then
// what it is.
func (tw *treeWriter) path(p string) {
	p = filepath.Clean(p)
	if tw.seen[p] || p == "/" {
		return
	}
	tw.seen[p] = true
	tw.path(filepath.Dir(p))
	parent, err := filepath.EvalSymlinks(filepath.Dir(p))
	if err != nil {
		tw.t.Fatal(err)
	}
	if parent != filepath.Dir(p) {
		// The parent is reached through a symlink: add the real one.
		tw.path(filepath.Join(parent, filepath.Base(p)))
		return
	}
	fi, err := os.Lstat(p)
	if err != nil {
		tw.t.Fatal(err)
	}
	name := strings.TrimPrefix(p, "/")
	switch {
	case fi.Mode()&os.ModeSymlink != 0:
		target, _ := os.Readlink(p)
		tw.header(&tar.Header{Name: name, Typeflag: tar.TypeSymlink, Linkname: target})
		if !filepath.IsAbs(target) {
			target = filepath.Join(filepath.Dir(p), target)
		}
		tw.path(target)
	case fi.IsDir():
		tw.header(&tar.Header{Name: name + "/", Typeflag: tar.TypeDir, Mode: int64(fi.Mode().Perm())})
	case fi.Mode().IsRegular():
		b, err := os.ReadFile(p)
		if err != nil {
			tw.t.Fatal(err)
		}
		tw.file(name, string(b), int64(fi.Mode().Perm()))
	}
}

// tree adds a folder and everything in it but tests, caches and
// third-party packages.
func (tw *treeWriter) tree(dir string) {
	_ = filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return nil
		}
		switch fi.Name() {
		case "test", "tests", "__pycache__", "dist-packages", "site-packages", "idlelib", "tkinter", "ensurepip":
			if fi.IsDir() {
				return filepath.SkipDir
			}
		}
		tw.path(p)
		return nil
	})
}

// userDir is a folder owned by a user who is not root.
func userDir(t *testing.T) string {
	dir := t.TempDir()
	if err := os.Chown(dir, 54321, 54321); err != nil {
		t.Fatal(err)
	}
	return dir
}

// emptyRoot is a root-owned folder with nothing in it.
func emptyRoot(t *testing.T) string {
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestTemplatePoolShare: the warm pool slots are shared fairly between
// users, end to end through sandboxctl: one user's templates' pools stay
// within pool_share_per_uid, so another user can still add a pooled
// template; pool_max_total bounds everyone, root included.
func TestTemplatePoolShare(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, "pool_max_total = 4\npool_share_per_uid = 2\n")
	ctx := context.Background()
	if err := os.Chmod(d.socket, 0o666); err != nil {
		t.Fatal(err)
	}
	alice := otherUser
	bob := &syscall.Credential{Uid: 54322, Gid: 54322}

	if _, stderr, code := runCtl(t, d.socket, alice, "", "template", "add", "alice-pool", "--pool-size", "2"); code != 0 {
		t.Fatalf("alice adds a template with her whole share: %q %d", stderr, code)
	}
	if _, stderr, code := runCtl(t, d.socket, alice, "", "template", "add", "alice-more", "--pool-size", "1"); code == 0 || !strings.Contains(stderr, "pool_share_per_uid (2") || !strings.Contains(stderr, "keep 2 warm sandboxes") {
		t.Errorf("alice past her share: %q %d", stderr, code)
	}
	if _, stderr, code := runCtl(t, d.socket, alice, "", "template", "add", "alice-more"); code != 0 {
		t.Errorf("alice adds a template without a pool: %q %d", stderr, code)
	}
	if _, stderr, code := runCtl(t, d.socket, bob, "", "template", "add", "bob-pool", "--pool-size", "2"); code != 0 {
		t.Fatalf("bob adds a pooled template beside alice's: %q %d", stderr, code)
	}
	waitFor(t, func() bool {
		info, err := d.c.Info(ctx)
		return err == nil && info.Pool.Size == 4 && info.Pool.Idle == 4
	})
	if _, err := d.c.AddTemplate(ctx, &api.Template{Name: "root-pool", PoolSize: ptr(1)}); !errdefs.IsResourceExhausted(err) || !strings.Contains(err.Error(), "over pool_max_total (4)") {
		t.Errorf("root past pool_max_total: %v", err)
	}

	for _, rm := range []struct {
		cred *syscall.Credential
		name string
	}{{alice, "alice-pool"}, {alice, "alice-more"}, {bob, "bob-pool"}} {
		if _, stderr, code := runCtl(t, d.socket, rm.cred, "", "template", "rm", rm.name); code != 0 {
			t.Errorf("remove %s: %q %d", rm.name, stderr, code)
		}
	}
	waitFor(t, func() bool {
		info, err := d.c.Info(ctx)
		return err == nil && info.Pool.Size == 0 && info.Pool.Idle == 0
	})
}

// TestTemplateNamesPerOwner: templates are per owner, end to end through
// sandboxctl as two real users. A member's template never runs for root's
// bare name (issue 30: a member's preload read root's --env token), two
// users may each add one of a name (no 409 telling of another's), and
// another user's template is named only as uid/name: by root, never by
// another member.
func TestTemplateNamesPerOwner(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, "")
	if err := os.Chmod(d.socket, 0o666); err != nil {
		t.Fatal(err)
	}
	alice := otherUser
	bob := &syscall.Credential{Uid: 54322, Gid: 54322}
	const leak = "import os\nWHO = 'alice:' + os.environ.get('ROOT_TOKEN', '')"
	if _, stderr, code := runCtl(t, d.socket, alice, "", "template", "add", "data-science", "--preload", leak); code != 0 {
		t.Fatalf("alice adds data-science: %q %d", stderr, code)
	}
	run := func(cred *syscall.Credential, template string) (string, string, int) {
		t.Helper()
		out, stderr, code := runCtl(t, d.socket, cred, "", "run", "--template", template, "--env", "ROOT_TOKEN=secret", "-c", "print(WHO)")
		return strings.TrimSpace(out), stderr, code
	}
	if out, stderr, code := run(nil, "data-science"); code == 0 || strings.Contains(out, "alice") || !strings.Contains(stderr, "no such template") {
		t.Fatalf("root runs --template data-science with only alice's: %q %q %d", out, stderr, code)
	}
	if _, stderr, code := d.ctl(t, "", "template", "add", "data-science", "--preload", "WHO = 'root'"); code != 0 {
		t.Fatalf("root adds its own data-science beside alice's: %q %d", stderr, code)
	}
	if _, stderr, code := runCtl(t, d.socket, bob, "", "template", "add", "data-science", "--preload", "WHO = 'bob'"); code != 0 {
		t.Fatalf("bob adds his own data-science: %q %d", stderr, code)
	}
	if _, stderr, code := runCtl(t, d.socket, alice, "", "template", "add", "data-science"); code == 0 || !strings.Contains(stderr, "exists") {
		t.Errorf("alice adds data-science again: %q %d, want a conflict", stderr, code)
	}
	for _, c := range []struct {
		who      string
		cred     *syscall.Credential
		template string
		want     string
	}{
		{"root", nil, "data-science", "root"},
		{"alice", alice, "data-science", "alice:secret"},
		{"bob", bob, "data-science", "bob"},
		{"root, alice's by uid/name", nil, "54321/data-science", "alice:secret"},
	} {
		if out, stderr, code := run(c.cred, c.template); code != 0 || out != c.want {
			t.Errorf("%s runs --template %s: %q %q %d, want %q", c.who, c.template, out, stderr, code, c.want)
		}
	}
	if out, stderr, code := run(bob, "54321/data-science"); code == 0 || strings.Contains(out, "alice") || !strings.Contains(stderr, "no such template") {
		t.Errorf("bob runs alice's template by uid/name: %q %q %d, want not found", out, stderr, code)
	}
	out, _, _ := d.ctl(t, "", "template", "ls")
	if !strings.Contains(out, "OWNER") || !regexp.MustCompile(`(?m)^data-science\s+54321\s`).MatchString(out) || !regexp.MustCompile(`(?m)^data-science\s+0\s`).MatchString(out) {
		t.Errorf("template ls shows no owners: %q", out)
	}
	for _, rm := range []struct {
		cred *syscall.Credential
		name string
	}{{nil, "data-science"}, {nil, "54322/data-science"}, {alice, "data-science"}} {
		if _, stderr, code := runCtl(t, d.socket, rm.cred, "", "template", "rm", rm.name); code != 0 {
			t.Errorf("remove %s: %q %d", rm.name, stderr, code)
		}
	}
}
