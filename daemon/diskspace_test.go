package daemon

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/containerd/errdefs"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/daemon/config"
	"github.com/sandboxd/sandboxd/daemon/pool"
	"github.com/sandboxd/sandboxd/isolation/volume"
)

const mb = 1 << 20

// TestDiskBudget: the admission arithmetic.
func TestDiskBudget(t *testing.T) {
	tests := []struct {
		name       string
		b          diskBudget
		want       int64
		fits       bool
		promisable int64
	}{
		{"room to spare", diskBudget{free: 1000 * mb, floor: 100 * mb, overcommit: 1}, 200 * mb, true, 900 * mb},
		{"exactly to the floor", diskBudget{free: 300 * mb, floor: 100 * mb, overcommit: 1}, 200 * mb, true, 200 * mb},
		{"one MiB over", diskBudget{free: 299 * mb, floor: 100 * mb, overcommit: 1}, 200 * mb, false, 199 * mb},
		{"the issue: 96 MB disk, 200 MB asked", diskBudget{free: 80 * mb, floor: 64 * mb, overcommit: 1}, 200 * mb, false, 16 * mb},
		{"promises take the room", diskBudget{free: 1000 * mb, outstanding: 850 * mb, floor: 100 * mb, overcommit: 1}, 100 * mb, false, 50 * mb},
		{"promised more than free", diskBudget{free: 100 * mb, outstanding: 500 * mb, overcommit: 1}, 16 * mb, false, 0},
		{"overcommit doubles the room", diskBudget{free: 300 * mb, outstanding: 300 * mb, floor: 100 * mb, overcommit: 2}, 100 * mb, true, 100 * mb},
		{"no floor", diskBudget{free: 200 * mb, overcommit: 1}, 200 * mb, true, 200 * mb},
		{"plain folder above the floor", diskBudget{free: 200 * mb, floor: 100 * mb, overcommit: 1}, 0, true, 100 * mb},
		{"plain folder under the floor", diskBudget{free: 50 * mb, floor: 100 * mb, overcommit: 1}, 0, false, 0},
		{"plain folder at the floor", diskBudget{free: 100 * mb, floor: 100 * mb, overcommit: 1}, 0, true, 0},
		{"huge overcommit stays finite", diskBudget{free: math.MaxInt64 / 2, overcommit: 1e9}, 1 << 40, true, math.MaxInt64},
		{"under the floor, overcommit or not", diskBudget{free: 50 * mb, floor: 100 * mb, overcommit: 1000}, 16 * mb, false, 0},
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
	err := diskBudget{free: 80 * mb, floor: 64 * mb, overcommit: 1}.refusal(200 * mb)
	if !errdefs.IsResourceExhausted(err) {
		t.Fatalf("class: %v", err)
	}
	if d, ok := api.RetryAfter(err); !ok || d != diskRetryAfter {
		t.Fatalf("retry after %v %v", d, ok)
	}
	want := "the data dir has 80 MiB free of which 16 MiB can be promised: a 200 MiB disk does not fit above the 64 MiB floor (data_dir_min_free_mb); delete sessions or ask for less disk_mb"
	if err.Error() != want {
		t.Fatalf("message:\n%s\nwant\n%s", err, want)
	}
	if msg := (diskBudget{free: 10 * mb, floor: 64 * mb}).refusal(0).Error(); !strings.Contains(msg, "10 MiB free, under its 64 MiB floor") {
		t.Fatalf("plain folder message: %s", msg)
	}
}

// TestPromiseDisk: the ledger over sparse images: what is promised counts
// until the image holds it, existing images are counted without a check,
// and a removed session's promise ends.
func TestPromiseDisk(t *testing.T) {
	dir := t.TempDir()
	disk := newFakeDisk(1000 * mb)
	disk.real = false
	d := &Daemon{
		cfg:   config.Config{DataDir: dir, DiskQuota: volume.Loop, DataDirMinFreeMB: 100, DiskOvercommit: 1},
		paths: layout{dataDir: dir},
		probe: disk,
		disks: newDiskLedger(),
	}
	ctx := context.Background()
	promise := func(id string, size int64) error {
		t.Helper()
		_, err := d.promiseDisk(ctx, id, size, poolDisk)
		return err
	}
	if err := promise("a", 500*mb); err != nil {
		t.Fatal(err)
	}
	disk.images["a"] = true
	// 900 MiB above the floor, 500 promised: 500 does not fit, 400 does.
	if err := promise("b", 500*mb); !errdefs.IsResourceExhausted(err) {
		t.Fatalf("b: %v", err)
	}
	// a's image now holds 300 MiB, taken from the free space: still 400
	// MiB may be promised.
	disk.alloc["a"] = 300 * mb
	disk.setFree(700 * mb)
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
	disk.images["c"] = true
	if err := promise("c", 5000*mb); err != nil {
		t.Fatalf("existing image: %v", err)
	}
	d.forgetDisk("c")
	d.forgetDisk("b")
	if err := promise("e", 400*mb); err != nil {
		t.Fatalf("after b went: %v", err)
	}
}

// TestCreateRefusedForSpace: a create that would take the data dir under
// its floor is a 429 naming what is free; health says degraded until
// space is back.
func TestCreateRefusedForSpace(t *testing.T) {
	e := newEnv(t, func(c *config.Config) { c.DataDirMinFreeMB = 1024 })
	d := e.start()
	e.disk.setFree(100 * mb)
	_, err := d.CreateSession(as(1000), &api.CreateSessionRequest{})
	if !errdefs.IsResourceExhausted(err) || !strings.Contains(err.Error(), "100 MiB free") {
		t.Fatalf("create under the floor: %v", err)
	}
	if _, ok := api.RetryAfter(err); !ok {
		t.Fatal("no Retry-After")
	}
	if sess, _ := d.ListSessions(root, nil); len(sess) != 0 {
		t.Fatalf("a refused create left sessions: %v", sess)
	}
	if len(e.h.ids()) != 0 {
		t.Fatal("a refused create started a sandbox")
	}
	// Degraded, not unhealthy: the daemon still serves its sessions
	// (issue 30: it said unhealthy, and the server 503).
	h, _ := d.Health(root)
	if h.Status != api.HealthDegraded || h.DataDir == nil || h.DataDir.OK || h.DataDir.FreeMB != 100 || h.DataDir.MinFreeMB != 1024 ||
		len(h.Reasons) != 1 || !strings.HasPrefix(h.Reasons[0], "data_dir: 100 MiB free") || h.Checks[api.CheckDatabase].OK != true {
		t.Fatalf("health under the floor: %+v %+v", h, h.DataDir)
	}
	e.disk.setFree(2048 * mb)
	mustCreate(t, d, as(1000))
	if h, _ := d.Health(root); h.Status != api.HealthOK || !h.DataDir.OK {
		t.Fatalf("health above the floor: %+v", h)
	}
}

// TestPoolWaitsForSpace: a pool that finds no space waits, and fills once
// a session goes.
func TestPoolWaitsForSpace(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *config.Config) { c.PoolSize = 1; c.DataDirMinFreeMB = 1024 })
	e.disk.setFree(100 * mb)
	d := e.start()
	time.Sleep(100 * time.Millisecond)
	if n := len(e.h.ids()); n != 0 {
		t.Fatalf("%d sandboxes started without space", n)
	}
	e.disk.setFree(2048 * mb)
	d.tmpl.Wake()
	waitPool(t, d, 1)
}

// TestPoolDiskReadOnly: a pooled sandbox whose disk went read-only (its
// ext4 met an error) is not handed out: the create gets a fresh one.
func TestPoolDiskReadOnly(t *testing.T) {
	e := newEnv(t, func(c *config.Config) { c.PoolSize = 1 })
	d := e.start()
	waitPool(t, d, 1)
	sick := e.h.ids()[0]
	e.disk.setReadOnly(sick)
	s := mustCreate(t, d, root)
	if s.ID == sick {
		t.Fatal("claimed the sandbox whose disk is read-only")
	}
	if e.h.box(sick) != nil {
		t.Fatal("the sandbox whose disk is read-only still runs")
	}
	if _, err := os.Stat(filepath.Join(e.cfg.DataDir, "sessions", sick)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("its folder is left: %v", err)
	}
	if n := counterValue(t, d.metrics.poolDeaths.WithLabelValues(pool.DefaultTemplate)); n != 1 {
		t.Fatalf("pool deaths counted: %v, want 1", n)
	}
}

// TestRecordErr: a state write the full data dir refused is the client's
// 429, saying so; any other is internal.
func TestRecordErr(t *testing.T) {
	full := recordErr("s1", &os.PathError{Op: "write", Path: "sandboxd.db", Err: syscall.ENOSPC})
	if !errdefs.IsResourceExhausted(full) || !strings.Contains(full.Error(), "the data dir is full") {
		t.Fatalf("ENOSPC: %v", full)
	}
	if _, ok := api.RetryAfter(full); !ok {
		t.Fatal("no Retry-After")
	}
	other := recordErr("s1", errors.New("boom"))
	if status, _ := api.FromError(other); status != 500 {
		t.Fatalf("another error: %d %v", status, other)
	}
}

// TestDiskSharePerUID: one user's disks stay within their share of what
// the data dir can promise (issue 30: one `create --disk 32834M` took
// the whole budget and every other user's create answered 429). Root is
// bounded by the data dir alone; a pooled sandbox's disk becomes its
// claimer's; writes into disks do not move the share.
func TestDiskSharePerUID(t *testing.T) {
	dir := t.TempDir()
	disk := newFakeDisk(2000 * mb)
	disk.real = false
	d := &Daemon{
		cfg:   config.Config{DataDir: dir, DiskQuota: volume.Loop, DiskOvercommit: 1},
		paths: layout{dataDir: dir},
		probe: disk,
		disks: newDiskLedger(),
	}
	ctx := context.Background()
	promise := func(id string, size int64, o diskOwner) error {
		t.Helper()
		_, err := d.promiseDisk(ctx, id, size, o)
		if err == nil {
			disk.images[id] = true
		}
		return err
	}
	alice, bob := sessionDisk(1000), sessionDisk(1001)
	// 2000 MiB can be promised; the default share is half: 1000 MiB.
	if err := promise("a1", 600*mb, alice); err != nil {
		t.Fatal(err)
	}
	err := promise("a2", 500*mb, alice)
	want := "uid 1000's sessions hold 600 MiB of disk, and a 500 MiB disk does not fit in its share of 1000 MiB (disk_share_per_uid 0.5 of the 2000 MiB the data dir can promise): delete sessions of yours or ask for less disk_mb"
	if !errdefs.IsResourceExhausted(err) || !isShareRefusal(err) || err.Error() != want {
		t.Fatalf("alice past her share:\n%v\nwant\n%s", err, want)
	}
	if d, ok := api.RetryAfter(err); !ok || d != diskRetryAfter {
		t.Fatalf("retry after %v %v", d, ok)
	}
	if status, _ := api.FromError(err); status != 429 {
		t.Fatalf("status %d", status)
	}
	if err := d.checkDiskShare(ctx, 1000, 500); !isShareRefusal(err) {
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
	disk.alloc["a1"] = 600 * mb
	disk.setFree(1400 * mb)
	if err := promise("a3", 1*mb, alice); !isShareRefusal(err) {
		t.Fatalf("alice after writes: %v", err)
	}
	d.forgetDisk("b1")
	// A pooled sandbox's disk is no one's, until a claim adopts it.
	if err := promise("p1", 300*mb, poolDisk); err != nil {
		t.Fatal(err)
	}
	if err := d.adoptDisk(ctx, "p1", 1000); !isShareRefusal(err) {
		t.Fatalf("alice claims past her share: %v", err)
	}
	if err := d.adoptDisk(ctx, "p1", 1001); err != nil {
		t.Fatalf("bob claims: %v", err)
	}
	d.disks.mu.Lock()
	held := d.heldLocked(1001)
	d.disks.mu.Unlock()
	if held != 300*mb {
		t.Fatalf("bob holds %d MiB, want 300", held/mb)
	}
	// Root is bounded by the data dir alone: 1400 MiB free, 0 outstanding
	// of a1, 400 of a2, 300 of p1: 700 MiB may be promised, past any share.
	if err := d.checkDiskShare(ctx, 0, 700); err != nil {
		t.Fatalf("root: %v", err)
	}
	if err := promise("r1", 700*mb, sessionDisk(0)); err != nil {
		t.Fatalf("root: %v", err)
	}
	if err := promise("r2", 1*mb, sessionDisk(0)); !errdefs.IsResourceExhausted(err) || isShareRefusal(err) {
		t.Fatalf("root past the data dir: %v", err)
	}
	// disk_share_per_uid = 1: no bound but the data dir's.
	d.forgetDisk("r1")
	d.cfg.DiskSharePerUID = 1
	if err := promise("a3", 700*mb, alice); err != nil {
		t.Fatalf("alice with no share: %v", err)
	}
	// A plain folder promises nothing: no share to check.
	d.cfg.DiskQuota, d.cfg.DiskSharePerUID = volume.Plain, 0.01
	if err := d.checkDiskShare(ctx, 1000, 1<<20); err != nil {
		t.Fatalf("plain folders: %v", err)
	}
}
