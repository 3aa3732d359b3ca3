package sandboxfs

import (
	"context"
	"fmt"
	"io/fs"
	"maps"
	"math/rand"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/containerd/errdefs"
	"golang.org/x/sys/unix"
)

// newCheckpoints is a workspace and its checkpoints in a temp folder.
func newCheckpoints(t testing.TB) (*Checkpoints, string) {
	t.Helper()
	base := t.TempDir()
	ws := filepath.Join(base, "ws")
	if err := os.Mkdir(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	f := &FS{Workspace: ws, UID: os.Getuid(), GID: os.Getgid()}
	c, err := OpenCheckpoints(f, filepath.Join(base, "checkpoints"))
	if err != nil {
		t.Fatal(err)
	}
	return c, ws
}

// state is a workspace as the test sees it: path → type, mode, mtime and
// content or target.
func state(t testing.TB, ws string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(ws, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(ws, p)
		if rel == "." {
			return nil
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		switch {
		case fi.IsDir():
			out[rel] = fmt.Sprintf("dir %o", fi.Mode().Perm())
		case fi.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			out[rel] = "symlink " + target
		case fi.Mode().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			out[rel] = fmt.Sprintf("file %o %d %q", fi.Mode().Perm(), fi.ModTime().UnixNano(), b)
		default:
			out[rel] = "other"
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func checkState(t *testing.T, what string, got, want map[string]string) {
	t.Helper()
	if maps.Equal(got, want) {
		return
	}
	for _, k := range slices.Sorted(maps.Keys(want)) {
		if got[k] != want[k] {
			t.Errorf("%s: %s: got %q, want %q", what, k, got[k], want[k])
		}
	}
	for _, k := range slices.Sorted(maps.Keys(got)) {
		if _, ok := want[k]; !ok {
			t.Errorf("%s: %s: got %q, want nothing", what, k, got[k])
		}
	}
}

func write(t testing.TB, ws, rel, content string) {
	t.Helper()
	p := filepath.Join(ws, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func blobCount(t testing.TB, c *Checkpoints) int {
	t.Helper()
	names, err := readNames(c.blobDir())
	if err != nil {
		t.Fatal(err)
	}
	return len(names)
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// settle waits out the racy window, so the next Take trusts (ino, ctime,
// size) alone for what was written before.
func settle() { time.Sleep(racyWindow + 10*time.Millisecond) }

func TestCheckpointsRestoreEach(t *testing.T) {
	c, ws := newCheckpoints(t)
	ctx := context.Background()
	steps := []func(){
		func() { // 1: files, a folder, a symlink, an empty file
			write(t, ws, "a.txt", "one")
			write(t, ws, "d/x", "x")
			write(t, ws, "empty", "")
			must(t, os.Symlink("a.txt", filepath.Join(ws, "link")))
		},
		func() { // 2: modified, deleted, added, renamed, chmod
			write(t, ws, "a.txt", "one, two")
			must(t, os.Remove(filepath.Join(ws, "d/x")))
			write(t, ws, "d/y", "y")
			must(t, os.Rename(filepath.Join(ws, "empty"), filepath.Join(ws, "d/empty2")))
			must(t, os.Chmod(filepath.Join(ws, "d/y"), 0o600))
		},
		func() { // 3: a folder gone, a deep one added, a symlink changed
			must(t, os.RemoveAll(filepath.Join(ws, "d")))
			write(t, ws, "n/m/deep", "deep")
			must(t, os.Chmod(filepath.Join(ws, "n/m"), 0o700))
			must(t, os.Remove(filepath.Join(ws, "link")))
			must(t, os.Symlink("/etc/passwd", filepath.Join(ws, "link")))
		},
	}
	var states []map[string]string
	for i, step := range steps {
		step()
		states = append(states, state(t, ws))
		must(t, c.Take(ctx, uint64(i+1)))
	}
	if got := c.IDs(); !slices.Equal(got, []uint64{1, 2, 3}) {
		t.Fatalf("IDs %v", got)
	}
	// Changes after the last checkpoint, then back to each, newest first.
	write(t, ws, "later", "later")
	write(t, ws, "a.txt", "rewritten")
	must(t, os.RemoveAll(filepath.Join(ws, "n")))
	for id := 3; id >= 1; id-- {
		must(t, c.Restore(ctx, uint64(id)))
		checkState(t, fmt.Sprintf("restore %d", id), state(t, ws), states[id-1])
		if got := c.IDs(); len(got) != id-1 {
			t.Fatalf("after restore %d: IDs %v", id, got)
		}
	}
	if blobCount(t, c) == 0 {
		t.Fatal("the restored state's blobs must stay for the next Take")
	}
}

func TestCheckpointsSameSizeInPlace(t *testing.T) {
	c, ws := newCheckpoints(t)
	ctx := context.Background()
	p := filepath.Join(ws, "f")
	write(t, ws, "f", "aaaa")
	mtime := time.Unix(1700000000, 0)
	must(t, os.Chtimes(p, mtime, mtime))
	settle()
	must(t, c.Take(ctx, 1))
	// Same inode, same size, mtime put back: only ctime tells.
	f, err := os.OpenFile(p, os.O_WRONLY, 0)
	must(t, err)
	_, err = f.WriteAt([]byte("bbbb"), 0)
	must(t, err)
	must(t, f.Close())
	must(t, os.Chtimes(p, mtime, mtime))
	must(t, c.Take(ctx, 2))
	write(t, ws, "f", "cccc")
	must(t, c.Restore(ctx, 2))
	if b, _ := os.ReadFile(p); string(b) != "bbbb" {
		t.Fatalf("restore 2: %q", b)
	}
	must(t, c.Restore(ctx, 1))
	if b, _ := os.ReadFile(p); string(b) != "aaaa" {
		t.Fatalf("restore 1: %q", b)
	}
	if fi, _ := os.Stat(p); !fi.ModTime().Equal(mtime) {
		t.Fatalf("mtime %v, want %v", fi.ModTime(), mtime)
	}
}

func TestCheckpointsSymlinkOutside(t *testing.T) {
	for _, tc := range []struct {
		name  string
		plant func(ws, outside string) error
	}{
		{"folder replaced by a symlink", func(ws, outside string) error {
			if err := os.RemoveAll(filepath.Join(ws, "sub")); err != nil {
				return err
			}
			return os.Symlink(outside, filepath.Join(ws, "sub"))
		}},
		{"file replaced by a symlink", func(ws, outside string) error {
			p := filepath.Join(ws, "sub/f")
			if err := os.Remove(p); err != nil {
				return err
			}
			return os.Symlink(filepath.Join(outside, "f"), p)
		}},
		{"folder replaced by a relative symlink", func(ws, outside string) error {
			if err := os.RemoveAll(filepath.Join(ws, "sub")); err != nil {
				return err
			}
			rel, _ := filepath.Rel(ws, outside)
			return os.Symlink(rel, filepath.Join(ws, "sub"))
		}},
		{"folder removed and its parent a symlink", func(ws, outside string) error {
			if err := os.RemoveAll(filepath.Join(ws, "top")); err != nil {
				return err
			}
			return os.Symlink(outside, filepath.Join(ws, "top"))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, ws := newCheckpoints(t)
			outside := t.TempDir()
			write(t, outside, "f", "outside")
			write(t, outside, "keep/me", "outside")
			write(t, ws, "sub/f", "inside")
			write(t, ws, "sub/g", "inside")
			write(t, ws, "top/inner/f", "inside")
			want := state(t, ws)
			before := state(t, outside)
			must(t, c.Take(context.Background(), 1))
			must(t, tc.plant(ws, outside))
			must(t, c.Restore(context.Background(), 1))
			checkState(t, "outside", state(t, outside), before)
			checkState(t, "workspace", state(t, ws), want)
		})
	}
}

func TestCheckpointsBlobReuse(t *testing.T) {
	c, ws := newCheckpoints(t)
	ctx := context.Background()
	for i := range 5 {
		write(t, ws, fmt.Sprintf("d/f%d", i), strings.Repeat("x", i+1))
	}
	write(t, ws, "empty", "")
	settle()
	must(t, c.Take(ctx, 1))
	if n := blobCount(t, c); n != 5 {
		t.Fatalf("first take: %d blobs, want 5 (an empty file has none)", n)
	}
	must(t, c.Take(ctx, 2))
	if n := blobCount(t, c); n != 5 {
		t.Fatalf("unchanged take: %d blobs, want 5", n)
	}
	write(t, ws, "d/f0", "changed")
	must(t, c.Take(ctx, 3))
	if n := blobCount(t, c); n != 6 {
		t.Fatalf("one change: %d blobs, want 6", n)
	}
	// A racy entry (just written) is compared, not copied again.
	must(t, c.Take(ctx, 4))
	if n := blobCount(t, c); n != 6 {
		t.Fatalf("racy but unchanged: %d blobs, want 6", n)
	}
	// What a Restore wrote is not copied again by the next Take.
	write(t, ws, "d/f1", "changed too")
	write(t, ws, "d/f2", "changed too")
	must(t, c.Restore(ctx, 4))
	n := blobCount(t, c)
	must(t, c.Take(ctx, 5))
	if m := blobCount(t, c); m != n {
		t.Fatalf("take after restore: %d blobs, then %d", n, m)
	}
	settle()
	must(t, c.Take(ctx, 6))
	if m := blobCount(t, c); m != n {
		t.Fatalf("second take after restore: %d blobs, then %d", n, m)
	}
}

func TestCheckpointsKeep(t *testing.T) {
	c, ws := newCheckpoints(t)
	ctx := context.Background()
	for id := uint64(1); id <= 4; id++ {
		for i := range 3 {
			write(t, ws, fmt.Sprintf("f%d", i), fmt.Sprintf("%d-%d", id, i))
		}
		must(t, c.Take(ctx, id))
	}
	if n := blobCount(t, c); n != 12 {
		t.Fatalf("%d blobs, want 12", n)
	}
	must(t, c.Keep(2))
	if got := c.IDs(); !slices.Equal(got, []uint64{3, 4}) {
		t.Fatalf("IDs %v", got)
	}
	if n := blobCount(t, c); n != 6 {
		t.Fatalf("after Keep(2): %d blobs, want 6", n)
	}
	must(t, c.Restore(ctx, 3))
	if b, _ := os.ReadFile(filepath.Join(ws, "f1")); string(b) != "3-1" {
		t.Fatalf("restore 3: %q", b)
	}
	if err := c.Restore(ctx, 1); !errdefs.IsNotFound(err) {
		t.Fatalf("restore of a dropped checkpoint: %v", err)
	}
	must(t, c.Keep(0))
	if n := blobCount(t, c); n != 0 || len(c.IDs()) != 0 {
		t.Fatalf("after Keep(0): %d blobs, IDs %v", n, c.IDs())
	}
	if err := c.Keep(-1); !errdefs.IsInvalidArgument(err) {
		t.Fatalf("Keep(-1): %v", err)
	}
}

func TestCheckpointsReopen(t *testing.T) {
	c, ws := newCheckpoints(t)
	ctx := context.Background()
	write(t, ws, "a", "1")
	must(t, os.Symlink("a", filepath.Join(ws, "l")))
	want := state(t, ws)
	must(t, c.Take(ctx, 10))
	write(t, ws, "a", "2")
	write(t, ws, "b", "2")
	must(t, c.Take(ctx, 20))
	// What a crash leaves: a blob no manifest names, a temp manifest.
	write(t, c.dir, "blobs/999", "orphan")
	write(t, c.dir, "manifests/.30.tmp", "{")
	write(t, c.dir, "manifests/junk", "{")
	c2, err := OpenCheckpoints(c.fs, c.dir)
	must(t, err)
	if got := c2.IDs(); !slices.Equal(got, []uint64{10, 20}) {
		t.Fatalf("IDs after reopen %v", got)
	}
	for _, p := range []string{"blobs/999", "manifests/.30.tmp", "manifests/junk"} {
		if _, err := os.Stat(filepath.Join(c.dir, p)); !os.IsNotExist(err) {
			t.Errorf("%s not removed on open: %v", p, err)
		}
	}
	if n := blobCount(t, c2); n != 3 {
		t.Fatalf("%d blobs, want 3", n)
	}
	// The newest checkpoint is the baseline: nothing changed, nothing copied.
	must(t, c2.Take(ctx, 30))
	if n := blobCount(t, c2); n != 3 {
		t.Fatalf("take after reopen: %d blobs, want 3", n)
	}
	must(t, c2.Restore(ctx, 10))
	checkState(t, "restore after reopen", state(t, ws), want)
}

func TestCheckpointsErrors(t *testing.T) {
	c, ws := newCheckpoints(t)
	ctx := context.Background()
	write(t, ws, "a", "1")
	if err := c.Restore(ctx, 1); !errdefs.IsNotFound(err) {
		t.Fatalf("restore of an unknown id: %v", err)
	}
	must(t, c.Take(ctx, 2))
	if err := c.Take(ctx, 2); !errdefs.IsInvalidArgument(err) {
		t.Fatalf("take of the same id: %v", err)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if err := c.Take(cancelled, 3); err == nil {
		t.Fatal("a cancelled take must fail")
	}
	if got := c.IDs(); !slices.Equal(got, []uint64{2}) {
		t.Fatalf("IDs %v", got)
	}
	if err := c.Restore(cancelled, 2); err == nil {
		t.Fatal("a cancelled restore must fail")
	}
	must(t, c.Restore(ctx, 2))
}

func TestCheckpointsDiskFull(t *testing.T) {
	for _, err := range []error{diskFull(fmt.Errorf("d/f: %w", unix.ENOSPC)), restoreFull(fmt.Errorf("d/f: %w", unix.EDQUOT))} {
		if !errdefs.IsResourceExhausted(err) || !strings.Contains(err.Error(), "disk_mb") || strings.Contains(err.Error(), "d/f") {
			t.Errorf("%v: want a plain resource-exhausted sentence", err)
		}
	}
}

func TestCheckpointsSkipsFifos(t *testing.T) {
	c, ws := newCheckpoints(t)
	ctx := context.Background()
	write(t, ws, "a", "1")
	must(t, unix.Mkfifo(filepath.Join(ws, "fifo"), 0o644))
	must(t, c.Take(ctx, 1))
	if n, err := c.Skipped(1); n != 1 || err != nil {
		t.Fatalf("Skipped: %d %v", n, err)
	}
	must(t, c.Restore(ctx, 1))
	if _, err := os.Lstat(filepath.Join(ws, "fifo")); !os.IsNotExist(err) {
		t.Fatalf("the fifo is not in the checkpoint, so restore removes it: %v", err)
	}
}

// TestCheckpointsRandomized runs random changes, a checkpoint after
// each round, then restores random checkpoints, newest first.
func TestCheckpointsRandomized(t *testing.T) {
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewSource(seed))
	c, ws := newCheckpoints(t)
	ctx := context.Background()
	names := []string{"a", "b", "c", "d/a", "d/b", "d/e/a", "f/a", "f/g/h/a"}
	change := func() {
		p := names[rng.Intn(len(names))]
		full := filepath.Join(ws, p)
		switch rng.Intn(6) {
		case 0, 1:
			if fi, err := os.Lstat(full); err == nil && !fi.Mode().IsRegular() {
				_ = os.RemoveAll(full)
			}
			if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
				return // a file where a folder would be
			}
			_ = os.WriteFile(full, []byte(strings.Repeat(string(rune('a'+rng.Intn(26))), rng.Intn(3000))), 0o644)
		case 2:
			_ = os.RemoveAll(full)
		case 3:
			if d := filepath.Dir(full); d != ws {
				_ = os.RemoveAll(d)
			}
		case 4:
			_ = os.RemoveAll(full)
			_ = os.Symlink(names[rng.Intn(len(names))], full)
		case 5:
			_ = os.Chmod(full, fs.FileMode(0o600+rng.Intn(0o100)))
			if d := filepath.Dir(full); d != ws {
				_ = os.Chmod(d, fs.FileMode(0o700+rng.Intn(0o100)))
			}
		}
	}
	var states []map[string]string
	for id := 1; id <= 12; id++ {
		for range 1 + rng.Intn(5) {
			change()
		}
		states = append(states, state(t, ws))
		must(t, c.Take(ctx, uint64(id)))
	}
	for id := 12; id >= 1; id -= 1 + rng.Intn(3) {
		for range rng.Intn(4) {
			change()
		}
		must(t, c.Restore(ctx, uint64(id)))
		checkState(t, fmt.Sprintf("restore %d", id), state(t, ws), states[id-1])
	}
}

// benchWorkspace is 1000 files of 10 KB in 10 folders, checkpointed once.
func benchWorkspace(b *testing.B) (*Checkpoints, string) {
	c, ws := newCheckpoints(b)
	buf := []byte(strings.Repeat("0123456789", 1024))
	for i := range 1000 {
		write(b, ws, fmt.Sprintf("d%d/f%d", i%10, i), string(buf))
	}
	settle()
	must(b, c.Take(context.Background(), 1))
	return c, ws
}

// change10 rewrites 10 of the benchmark's files.
func change10(b *testing.B, ws string, round int) {
	for k := range 10 {
		i := (round*10 + k) % 1000
		write(b, ws, fmt.Sprintf("d%d/f%d", i%10, i), fmt.Sprintf("round %d", round))
	}
}

func BenchmarkCheckpointsTake(b *testing.B) {
	c, ws := benchWorkspace(b)
	ctx := context.Background()
	id := uint64(1)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		change10(b, ws, i)
		must(b, c.Keep(2))
		id++
		b.StartTimer()
		must(b, c.Take(ctx, id))
	}
	b.StopTimer()
	b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/take")
}

func BenchmarkCheckpointsRestore(b *testing.B) {
	c, ws := benchWorkspace(b)
	ctx := context.Background()
	id := uint64(1)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		change10(b, ws, i)
		b.StartTimer()
		must(b, c.Restore(ctx, id))
		b.StopTimer()
		id++
		must(b, c.Take(ctx, id))
		b.StartTimer()
	}
	b.StopTimer()
	b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/restore")
}

// BenchmarkCheckpointsFirstTake copies the whole 10 MB workspace.
func BenchmarkCheckpointsFirstTake(b *testing.B) {
	ctx := context.Background()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		c, _ := benchWorkspace(b)
		must(b, c.Keep(0))
		b.StartTimer()
		must(b, c.Take(ctx, 2))
	}
	b.StopTimer()
	b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/take")
}
