package daemon

import (
	"errors"
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
	"github.com/sandboxd/sandboxd/internal/testutil"
)

const mb = 1 << 20

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
	h, _ := d.node.Health(root)
	if h.Status != api.HealthDegraded || h.DataDir == nil || h.DataDir.OK || h.DataDir.FreeMB != 100 || h.DataDir.MinFreeMB != 1024 ||
		len(h.Reasons) != 1 || !strings.HasPrefix(h.Reasons[0], "data_dir: 100 MiB free") || h.Checks[api.CheckDatabase].OK != true {
		t.Fatalf("health under the floor: %+v %+v", h, h.DataDir)
	}
	e.disk.setFree(2048 * mb)
	mustCreate(t, d, as(1000))
	if h, _ := d.node.Health(root); h.Status != api.HealthOK || !h.DataDir.OK {
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
	if n, _ := testutil.Scrape(t, d.metrics.Registry(), "sandboxd_pool_sandbox_deaths_total", "template", pool.DefaultTemplate); n != 1 {
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
