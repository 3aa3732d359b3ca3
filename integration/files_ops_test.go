package integration

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/containerd/errdefs"

	"github.com/sandboxd/sandboxd/api"
)

// TestFileOps: stat, mkdir, move and listing to a depth on a real
// session, what the sandbox made included, as the sandbox names it.
func TestFileOps(t *testing.T) {
	t.Parallel()
	eachRuntime(t, func(t *testing.T, rt, cfg string) {
		d := startDaemon(t, cfg)
		ctx := context.Background()
		id := d.session(t, nil)

		made, err := d.c.MakeFolder(ctx, id, "a/b")
		if err != nil || !made.Created || made.Type != "dir" || made.Path != "/workspace/a/b" {
			t.Fatalf("mkdir: %+v %v", made, err)
		}
		if again, err := d.c.MakeFolder(ctx, id, "/workspace/a/b"); err != nil || again.Created {
			t.Fatalf("mkdir again: %+v %v", again, err)
		}
		d.sh(t, id, "printf hi > a/b/f.txt && chmod 640 a/b/f.txt && ln -s f.txt a/b/link")
		st, err := d.c.StatFile(ctx, id, "a/b/f.txt")
		if err != nil || st.Type != "file" || st.Size != 2 || st.Mode != "0640" || st.Permissions != "-rw-r-----" ||
			st.Owner != "sandbox" || st.Group != "sandbox" || st.ModifiedAt.IsZero() {
			t.Fatalf("stat of the sandbox's file: %+v %v", st, err)
		}
		if st, err := d.c.StatFile(ctx, id, "a/b/link"); err != nil || st.Type != "symlink" || st.SymlinkTarget != "f.txt" {
			t.Fatalf("stat of a symlink: %+v %v", st, err)
		}
		if st, err := d.c.StatFile(ctx, id, "/tmp"); err != nil || st.Type != "dir" {
			t.Fatalf("stat of /tmp: %+v %v", st, err)
		}
		if _, err := d.c.StatFile(ctx, id, "/etc/passwd"); !errdefs.IsInvalidArgument(err) {
			t.Fatalf("stat outside: %v", err)
		}
		d.sh(t, id, "ln -s / a/out")
		if _, err := d.c.StatFile(ctx, id, "a/out/etc/passwd"); !errdefs.IsInvalidArgument(err) {
			t.Fatalf("stat through a symlink out: %v", err)
		}

		moved, err := d.c.MoveFile(ctx, id, "a/b/f.txt", "a/g.txt")
		if err != nil || moved.Path != "/workspace/a/g.txt" || moved.Size != 2 {
			t.Fatalf("move: %+v %v", moved, err)
		}
		if e := d.sh(t, id, "cat a/g.txt; test -e a/b/f.txt || echo gone"); e.Stdout != "higone\n" {
			t.Fatalf("the sandbox sees the move: %q", e.Stdout)
		}
		d.sh(t, id, "echo x > a/h.txt")
		if _, err := d.c.MoveFile(ctx, id, "a/g.txt", "a/h.txt"); !errdefs.IsConflict(err) {
			t.Fatalf("move over a file: %v", err)
		}
		if _, err := d.c.MoveFile(ctx, id, "a/g.txt", "/tmp/g.txt"); !errdefs.IsInvalidArgument(err) {
			t.Fatalf("move across roots: %v", err)
		}

		list, err := d.c.ListFolder(ctx, id, "a", 3)
		if err != nil {
			t.Fatal(err)
		}
		var paths []string
		for _, e := range list.Entries {
			paths = append(paths, e.Path)
		}
		slices.Sort(paths)
		want := []string{"/workspace/a/b", "/workspace/a/b/link", "/workspace/a/g.txt", "/workspace/a/h.txt", "/workspace/a/out"}
		if !slices.Equal(paths, want) {
			t.Fatalf("depth 3: %v", paths)
		}
		// Depth 1 answers as a GET of the folder always did.
		one, err := d.c.ListFolder(ctx, id, "a", 1)
		_, plain, err2 := d.c.GetFile(ctx, id, "a")
		if err != nil || err2 != nil || len(one.Entries) != len(plain.Entries) || one.Entries[0].Path != "" {
			t.Fatalf("depth 1: %+v %v / %+v %v", one, err, plain, err2)
		}
		if code, body := d.raw(t, "GET", "/v1/sessions/"+id+"/files?path=a&depth=99", ""); code != 400 {
			t.Fatalf("depth 99: %d %s", code, body)
		}

		// Another user's session is not found, by the CLI as by any call.
		if err := os.Chmod(d.socket, 0o666); err != nil {
			t.Fatal(err)
		}
		_, stderr, code := runCtl(t, d.socket, otherUser, "", "stat", id+":a")
		if code == 0 || !strings.Contains(stderr, "no such session") {
			t.Fatalf("another user's stat: %d %s", code, stderr)
		}
		// The CLI's own.
		out, stderr, code := d.ctl(t, "", "stat", id+":a/g.txt", "--json")
		var cst api.FileStat
		if code != 0 || json.Unmarshal([]byte(out), &cst) != nil || cst.Owner != "sandbox" {
			t.Fatalf("sandboxctl stat: %d %s %s", code, out, stderr)
		}
		if _, stderr, code := d.ctl(t, "", "mkdir", id+":c/d"); code != 0 {
			t.Fatalf("sandboxctl mkdir: %s", stderr)
		}
		if _, stderr, code := d.ctl(t, "", "mv", id+":c/d", id+":c/e"); code != 0 {
			t.Fatalf("sandboxctl mv: %s", stderr)
		}
		if e := d.sh(t, id, "test -d c/e && echo ok"); e.Stdout != "ok\n" {
			t.Fatalf("mkdir and mv seen inside: %q", e.Stdout)
		}

		// sandboxctl watch prints what the sandbox does, a JSON line each.
		cmd := exec.Command(filepath.Join(bin, "sandboxctl"), "--socket", d.socket, "watch", id+":c", "--json")
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
		lines := make(chan api.FileEvent, 100)
		go func() {
			sc := bufio.NewScanner(stdout)
			for sc.Scan() {
				var ev api.FileEvent
				if json.Unmarshal(sc.Bytes(), &ev) == nil {
					lines <- ev
				}
			}
			close(lines)
		}()
		seen := false
		for i := 0; i < 100 && !seen; i++ {
			d.sh(t, id, "touch c/w"+strconv.Itoa(i))
			select {
			case ev := <-lines:
				seen = ev.Type == api.FileCreate && strings.HasPrefix(ev.Path, "/workspace/c/w")
			case <-time.After(300 * time.Millisecond):
			}
		}
		if !seen {
			t.Fatal("sandboxctl watch printed no create")
		}
	})
}

// TestFileWatch: a watch sees what code in the sandbox makes and writes,
// in new folders too, and ends when the session stops.
func TestFileWatch(t *testing.T) {
	t.Parallel()
	eachRuntime(t, func(t *testing.T, rt, cfg string) {
		d := startDaemon(t, cfg, raced)
		ctx := context.Background()
		id := d.session(t, nil)
		evs := make(chan api.FileEvent, 1000)
		ended := make(chan error, 1)
		go func() {
			ended <- d.c.WatchFiles(ctx, id, "/workspace", true, nil, func(e api.FileEvent) error {
				evs <- e
				return nil
			})
		}()
		// The watch is set once its 200 is sent: upload until it reports one.
		waitFor := func(typ, path string, poke func()) {
			t.Helper()
			deadline := time.Now().Add(30 * time.Second)
			for time.Now().Before(deadline) {
				if poke != nil {
					poke()
				}
				timer := time.After(200 * time.Millisecond)
			drain:
				for {
					select {
					case e := <-evs:
						if e.Type == typ && e.Path == path {
							return
						}
					case <-timer:
						break drain
					}
				}
			}
			t.Fatalf("no %s of %s", typ, path)
		}
		waitFor(api.FileCreate, "/workspace/ready", func() {
			if _, err := d.c.PutFile(ctx, id, "ready", strings.NewReader("x")); err != nil {
				t.Fatal(err)
			}
			_ = d.c.DeleteFile(ctx, id, "ready")
		})
		d.sh(t, id, "echo one > made.txt")
		waitFor(api.FileCreate, "/workspace/made.txt", nil)
		d.sh(t, id, "echo two >> made.txt")
		waitFor(api.FileWrite, "/workspace/made.txt", nil)
		d.sh(t, id, "mkdir -p new/deeper && sleep 0.5 && echo three > new/deeper/f")
		waitFor(api.FileCreate, "/workspace/new/deeper/f", nil)

		// The stream ends with the session's sandbox.
		if _, err := d.c.StopSession(ctx, id); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-ended:
			if err != nil {
				t.Fatalf("the watch ended with %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("the watch outlived its session's sandbox")
		}
		// A stopped session is not watched.
		err := d.c.WatchFiles(ctx, id, ".", false, nil, func(api.FileEvent) error { return nil })
		if !errdefs.IsConflict(err) {
			t.Fatalf("watch of a stopped session: %v", err)
		}
		if errors.Is(err, context.Canceled) {
			t.Fatal(err)
		}
	})
}

// TestFileMetadata: an upload's metadata headers become user. extended
// attributes of the file in the session's folder, which stat, listings
// and the CLI answer, on each runtime; in a runc sandbox the code sees
// the same attributes (it is the same file system).
func TestFileMetadata(t *testing.T) {
	t.Parallel()
	eachRuntime(t, func(t *testing.T, rt, cfg string) {
		d := startDaemon(t, cfg)
		ctx := context.Background()
		id := d.session(t, nil)

		meta := map[string]string{"author": "ada", "Purpose": "a test: 1+1=2"}
		want := map[string]string{"author": "ada", "purpose": "a test: 1+1=2"}
		if _, err := d.c.PutFileMeta(ctx, id, "m/data.csv", strings.NewReader("a,b\n"), meta); err != nil {
			t.Fatal(err)
		}
		st, err := d.c.StatFile(ctx, id, "m/data.csv")
		if err != nil || !maps.Equal(st.Metadata, want) {
			t.Fatalf("stat: %+v %v", st, err)
		}
		if e := d.sh(t, id, "cat m/data.csv"); e.Stdout != "a,b\n" {
			t.Fatalf("the sandbox reads %q", e.Stdout)
		}
		list, err := d.c.ListFolder(ctx, id, "/workspace", 2)
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, e := range list.Entries {
			if e.Path == "/workspace/m/data.csv" {
				found = maps.Equal(e.Metadata, want)
			}
		}
		if !found {
			t.Fatalf("the listing's entry: %+v", list.Entries)
		}
		// A move keeps it; a write without headers replaces the file
		// whole, with none.
		if moved, err := d.c.MoveFile(ctx, id, "m/data.csv", "m/moved.csv"); err != nil || !maps.Equal(moved.Metadata, want) {
			t.Fatalf("move: %+v %v", moved, err)
		}
		out, stderr, code := d.ctl(t, "", "stat", id+":m/moved.csv")
		if code != 0 || !strings.Contains(out, `author="ada"`) {
			t.Fatalf("sandboxctl stat: %d %s %s", code, out, stderr)
		}
		if _, err := d.c.PutFile(ctx, id, "m/moved.csv", strings.NewReader("new")); err != nil {
			t.Fatal(err)
		}
		if st, err := d.c.StatFile(ctx, id, "m/moved.csv"); err != nil || st.Metadata != nil {
			t.Fatalf("after a plain write: %+v %v", st, err)
		}
		many := map[string]string{}
		for i := range 40 {
			many["k"+strconv.Itoa(i)] = "v"
		}
		if _, err := d.c.PutFileMeta(ctx, id, "m/many", strings.NewReader("x"), many); !errdefs.IsInvalidArgument(err) {
			t.Fatalf("too many keys: %v", err)
		}
		if rt != api.RuntimeRunc {
			return
		}
		d.c.PutFileMeta(ctx, id, "m/seen", strings.NewReader("x"), map[string]string{"author": "ada"})
		e := d.sh(t, id, `python3 -c 'import os; print(os.getxattr("m/seen", "user.author").decode()); os.setxattr("m/seen", "user.by-code", b"yes")'`)
		if e.Stdout != "ada\n" {
			t.Fatalf("the code reads %q %q", e.Stdout, e.Stderr)
		}
		if st, err := d.c.StatFile(ctx, id, "m/seen"); err != nil || st.Metadata["by-code"] != "yes" {
			t.Fatalf("the code's own attribute: %+v %v", st, err)
		}
	})
}
