package disk

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/containerd/errdefs"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/daemon/config"
	"github.com/sandboxd/sandboxd/isolation/volume"
)

const mb = 1 << 20

// TestDiskBudget: the admission arithmetic.
func TestDiskBudget(t *testing.T) {
	tests := []struct {
		name       string
		b          budget
		want       int64
		fits       bool
		promisable int64
	}{
		{"room to spare", budget{free: 1000 * mb, floor: 100 * mb, overcommit: 1}, 200 * mb, true, 900 * mb},
		{"exactly to the floor", budget{free: 300 * mb, floor: 100 * mb, overcommit: 1}, 200 * mb, true, 200 * mb},
		{"one MiB over", budget{free: 299 * mb, floor: 100 * mb, overcommit: 1}, 200 * mb, false, 199 * mb},
		{"the issue: 96 MB disk, 200 MB asked", budget{free: 80 * mb, floor: 64 * mb, overcommit: 1}, 200 * mb, false, 16 * mb},
		{"promises take the room", budget{free: 1000 * mb, outstanding: 850 * mb, floor: 100 * mb, overcommit: 1}, 100 * mb, false, 50 * mb},
		{"promised more than free", budget{free: 100 * mb, outstanding: 500 * mb, overcommit: 1}, 16 * mb, false, 0},
		{"overcommit doubles the room", budget{free: 300 * mb, outstanding: 300 * mb, floor: 100 * mb, overcommit: 2}, 100 * mb, true, 100 * mb},
		{"no floor", budget{free: 200 * mb, overcommit: 1}, 200 * mb, true, 200 * mb},
		{"plain folder above the floor", budget{free: 200 * mb, floor: 100 * mb, overcommit: 1}, 0, true, 100 * mb},
		{"plain folder under the floor", budget{free: 50 * mb, floor: 100 * mb, overcommit: 1}, 0, false, 0},
		{"plain folder at the floor", budget{free: 100 * mb, floor: 100 * mb, overcommit: 1}, 0, true, 0},
		{"huge overcommit stays finite", budget{free: math.MaxInt64 / 2, overcommit: 1e9}, 1 << 40, true, math.MaxInt64},
		{"under the floor, overcommit or not", budget{free: 50 * mb, floor: 100 * mb, overcommit: 1000}, 16 * mb, false, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.b.fits(tt.want); got != tt.fits {
				t.Errorf("fits(%d MiB) = %v, want %v (%s)", tt.want/mb, got, tt.fits, tt.b)
			}
			if got := tt.b.promisable(); got != tt.promisable {
				t.Errorf("promisable = %d MiB, want %d MiB", got/mb, tt.promisable/mb)
			}
		})
	}
}

// TestDiskRefusal: the 429 says what is free, what fits and what to do,
// with a Retry-After.
func TestDiskRefusal(t *testing.T) {
	err := budget{free: 80 * mb, floor: 64 * mb, overcommit: 1}.refusal(200 * mb)
	if !errdefs.IsResourceExhausted(err) {
		t.Fatalf("class: %v", err)
	}
	if ra, ok := api.RetryAfter(err); !ok || ra != RetryAfter {
		t.Fatalf("retry after %v %v", ra, ok)
	}
	want := "the data dir has 80 MiB free of which 16 MiB can be promised: a 200 MiB disk does not fit above the 64 MiB floor (data_dir_min_free_mb); delete sessions or ask for less disk_mb"
	if err.Error() != want {
		t.Fatalf("message:\n%s\nwant\n%s", err, want)
	}
	if msg := (budget{free: 10 * mb, floor: 64 * mb}).refusal(0).Error(); !strings.Contains(msg, "10 MiB free, under its 64 MiB floor") {
		t.Fatalf("plain folder message: %s", msg)
	}
}

// TestPromiseDisk: the ledger over sparse images: what is promised counts
// until the image holds it, existing images are counted without a check,
// and a removed session's promise ends.
func TestPromiseDisk(t *testing.T) {
	dir := t.TempDir()
	probe := newFakeProbe(1000 * mb)
	a := New(config.Config{DataDir: dir, DiskQuota: volume.Loop, DataDirMinFreeMB: 100, DiskOvercommit: 1}, probe, nil)
	ctx := context.Background()
	promise := func(id string, size int64) error {
		t.Helper()
		_, err := a.promise(ctx, id, size, Pool)
		return err
	}
	if err := promise("a", 500*mb); err != nil {
		t.Fatal(err)
	}
	probe.images["a"] = true
	// 900 MiB above the floor, 500 promised: 500 does not fit, 400 does.
	if err := promise("b", 500*mb); !errdefs.IsResourceExhausted(err) {
		t.Fatalf("b: %v", err)
	}
	// a's image now holds 300 MiB, taken from the free space: still 400
	// MiB may be promised.
	probe.alloc["a"] = 300 * mb
	probe.setFree(700 * mb)
	if err := promise("b", 401*mb); !errdefs.IsResourceExhausted(err) {
		t.Fatalf("b 401: %v", err)
	}
	if err := promise("b", 400*mb); err != nil {
		t.Fatal(err)
	}
	// Again for b: promised already, no new check.
	if err := promise("b", 400*mb); err != nil {
		t.Fatal(err)
	}
	// An image that exists (from before a restart) is counted unchecked.
	probe.images["c"] = true
	if err := promise("c", 5000*mb); err != nil {
		t.Fatalf("existing image: %v", err)
	}
	a.Forget("c")
	a.Forget("b")
	if err := promise("e", 400*mb); err != nil {
		t.Fatalf("after b went: %v", err)
	}
}

// TestDiskSharePerUID: one user's disks stay within their share of what
// the data dir can promise (issue 30: one `create --disk 32834M` took
// the whole budget and every other user's create answered 429). Root is
// bounded by the data dir alone; a pooled sandbox's disk becomes its
// claimer's; writes into disks do not move the share.
func TestDiskSharePerUID(t *testing.T) {
	dir := t.TempDir()
	probe := newFakeProbe(2000 * mb)
	a := New(config.Config{DataDir: dir, DiskQuota: volume.Loop, DiskOvercommit: 1}, probe, nil)
	ctx := context.Background()
	promise := func(id string, size int64, o Owner) error {
		t.Helper()
		_, err := a.promise(ctx, id, size, o)
		if err == nil {
			probe.images[id] = true
		}
		return err
	}
	alice, bob := Session(1000), Session(1001)
	// 2000 MiB can be promised; the default share is half: 1000 MiB.
	if err := promise("a1", 600*mb, alice); err != nil {
		t.Fatal(err)
	}
	err := promise("a2", 500*mb, alice)
	want := "uid 1000's sessions hold 600 MiB of disk, and a 500 MiB disk does not fit in its share of 1000 MiB (disk_share_per_uid 0.5 of the 2000 MiB the data dir can promise): delete sessions of yours or ask for less disk_mb"
	if !errdefs.IsResourceExhausted(err) || !IsShareRefusal(err) || err.Error() != want {
		t.Fatalf("alice past her share:\n%v\nwant\n%s", err, want)
	}
	if ra, ok := api.RetryAfter(err); !ok || ra != RetryAfter {
		t.Fatalf("retry after %v %v", ra, ok)
	}
	if status, _ := api.FromError(err); status != 429 {
		t.Fatalf("status %d", status)
	}
	if err := a.CheckShare(ctx, 1000, 500); !IsShareRefusal(err) {
		t.Fatalf("checkDiskShare for alice: %v", err)
	}
	if err := promise("a2", 400*mb, alice); err != nil {
		t.Fatalf("alice up to her share: %v", err)
	}
	// Bob still has his.
	if err := promise("b1", 900*mb, bob); err != nil {
		t.Fatalf("bob beside alice: %v", err)
	}
	// Writes into a disk take free space the promise held: the share
	// stays where it was.
	probe.alloc["a1"] = 600 * mb
	probe.setFree(1400 * mb)
	if err := promise("a3", 1*mb, alice); !IsShareRefusal(err) {
		t.Fatalf("alice after writes: %v", err)
	}
	a.Forget("b1")
	// A pooled sandbox's disk is no one's, until a claim adopts it.
	if err := promise("p1", 300*mb, Pool); err != nil {
		t.Fatal(err)
	}
	if err := a.Adopt(ctx, "p1", 1000); !IsShareRefusal(err) {
		t.Fatalf("alice claims past her share: %v", err)
	}
	if err := a.Adopt(ctx, "p1", 1001); err != nil {
		t.Fatalf("bob claims: %v", err)
	}
	a.mu.Lock()
	held := a.heldLocked(1001)
	a.mu.Unlock()
	if held != 300*mb {
		t.Fatalf("bob holds %d MiB, want 300", held/mb)
	}
	// Root is bounded by the data dir alone: 1400 MiB free, 0 outstanding
	// of a1, 400 of a2, 300 of p1: 700 MiB may be promised, past any share.
	if err := a.CheckShare(ctx, 0, 700); err != nil {
		t.Fatalf("root: %v", err)
	}
	if err := promise("r1", 700*mb, Session(0)); err != nil {
		t.Fatalf("root: %v", err)
	}
	if err := promise("r2", 1*mb, Session(0)); !errdefs.IsResourceExhausted(err) || IsShareRefusal(err) {
		t.Fatalf("root past the data dir: %v", err)
	}
	// disk_share_per_uid = 1: no bound but the data dir's.
	a.Forget("r1")
	a.cfg.DiskSharePerUID = 1
	if err := promise("a3", 700*mb, alice); err != nil {
		t.Fatalf("alice with no share: %v", err)
	}
	// A plain folder promises nothing: no share to check.
	a.cfg.DiskQuota, a.cfg.DiskSharePerUID = volume.Plain, 0.01
	if err := a.CheckShare(ctx, 1000, 1<<20); err != nil {
		t.Fatalf("plain folders: %v", err)
	}
}

// TestReconcile: at start, folders no record owns go; a recorded disk
// that exists is counted without a check, one that must be made again is
// made only if the data dir can hold it, else told to failed.
func TestReconcile(t *testing.T) {
	dir := t.TempDir()
	sessions := filepath.Join(dir, "sessions")
	for _, id := range []string{"orphan", "a"} {
		if err := os.MkdirAll(filepath.Join(sessions, id), 0o711); err != nil {
			t.Fatal(err)
		}
	}
	probe := newFakeProbe(10 * mb)
	probe.images["a"] = true
	a := New(config.Config{DataDir: dir, DiskQuota: volume.Plain, DataDirMinFreeMB: 64}, probe, slog.New(slog.NewTextHandler(io.Discard, nil)))
	var failed []string
	err := a.Reconcile(context.Background(), []Disk{{ID: "a", MB: 100, Owner: 1000}, {ID: "b", MB: 100, Owner: 1000}}, func(id string, err error) error {
		if !errdefs.IsResourceExhausted(err) {
			t.Errorf("%s failed with %v", id, err)
		}
		failed = append(failed, id)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(failed, []string{"b"}) {
		t.Fatalf("failed %v, want [b]", failed)
	}
	if _, err := os.Stat(filepath.Join(sessions, "orphan")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the orphan folder is left: %v", err)
	}
	if _, err := os.Stat(volume.Root(filepath.Join(sessions, "a"))); err != nil {
		t.Fatalf("a's filesystem: %v", err)
	}
	a.mu.Lock()
	_, ok := a.promised["a"]
	a.mu.Unlock()
	if !ok {
		t.Fatal("a's disk is not counted")
	}
}
