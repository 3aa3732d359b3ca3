package integration

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/containerd/errdefs"

	"github.com/sandboxd/sandboxd/api"
)

// TestDiskQuota checks disk_mb is a real limit: writes past it fail inside
// with ENOSPC, in /workspace and /tmp alike; uploads past it answer 429 and
// leave the file they would have replaced as it was; stats count exactly
// what is used; freeing space makes room again; and delete leaves no mount.
func TestDiskQuota(t *testing.T) {
	t.Parallel()
	eachRuntime(t, func(t *testing.T, rt, cfg string) {
		d := startDaemon(t, cfg)
		ctx := context.Background()
		disk := int64(20)
		id := d.session(t, &api.CreateSessionRequest{DiskMB: &disk})

		if _, err := d.c.PutFile(ctx, id, "/workspace/keep.txt", strings.NewReader("original")); err != nil {
			t.Fatal(err)
		}
		fill := "import errno\ntry:\n    with open('%s', 'wb') as f:\n        for _ in range(40):\n            f.write(b'x' * (1 << 20))\n            f.flush()\n    print('wrote 40 MiB')\nexcept OSError as e:\n    print(errno.errorcode[e.errno])"
		if e := d.py(t, id, strings.Replace(fill, "%s", "/workspace/big", 1)); strings.TrimSpace(e.Stdout) != "ENOSPC" {
			t.Fatalf("writing past the quota in /workspace: %s", describe(e))
		}
		if e := d.py(t, id, strings.Replace(fill, "%s", "/tmp/big", 1)); strings.TrimSpace(e.Stdout) != "ENOSPC" {
			t.Fatalf("/tmp shares the quota: %s", describe(e))
		}
		st, err := d.c.Stats(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if st.DiskLimitBytes < 16<<20 || st.DiskLimitBytes > disk<<20 || st.DiskBytes < st.DiskLimitBytes-(1<<20) || st.DiskBytes > st.DiskLimitBytes {
			t.Fatalf("stats of a full disk: %d of %d bytes", st.DiskBytes, st.DiskLimitBytes)
		}

		_, err = d.c.PutFile(ctx, id, "/workspace/keep.txt", bytes.NewReader(make([]byte, 4<<20)))
		if !errdefs.IsResourceExhausted(err) {
			t.Fatalf("an upload past the quota must be 429 resource_exhausted: %v", err)
		}
		status, body := d.raw(t, "PUT", "/v1/sessions/"+id+"/files?path=/workspace/other.bin", strings.Repeat("x", 4<<20))
		if status != 429 || !strings.Contains(string(body), `"resource_exhausted"`) {
			t.Fatalf("raw upload past the quota: %d %s", status, body)
		}
		if e := d.sh(t, id, "cat /workspace/keep.txt; echo; ls -a /workspace | grep -c upload"); e.Stdout != "original\n0\n" {
			t.Fatalf("a refused upload must lose nothing and leave nothing: %q", e.Stdout)
		}

		d.sh(t, id, "rm -f /workspace/big /tmp/big")
		if st, _ := d.c.Stats(ctx, id); st.DiskBytes > 2<<20 {
			t.Fatalf("after freeing space: %d bytes used", st.DiskBytes)
		}
		if _, err := d.c.PutFile(ctx, id, "/workspace/keep.txt", bytes.NewReader(make([]byte, 4<<20))); err != nil {
			t.Fatalf("room again after freeing space: %v", err)
		}

		// The disk and its files survive a stop, and go with a delete.
		if _, err := d.c.StopSession(ctx, id); err != nil {
			t.Fatal(err)
		}
		r, _, err := d.c.GetFile(ctx, id, "/workspace/keep.txt")
		if err != nil {
			t.Fatal(err)
		}
		n, _ := io.Copy(io.Discard, r)
		r.Close()
		if n != 4<<20 {
			t.Fatalf("download from a stopped session: %d bytes", n)
		}
		// A daemon that stops unmounts the disks of sessions that do not run
		// (nothing of it stays mounted, as when its package is removed); the
		// next one mounts them again to serve their files.
		d.terminate()
		if m := sandboxMounts(t, d.base); len(m) != 0 {
			t.Fatalf("a stopped session's disk stays mounted after the daemon stopped: %+v", m[0])
		}
		d.launch()
		if r, _, err = d.c.GetFile(ctx, id, "/workspace/keep.txt"); err != nil {
			t.Fatalf("download from a stopped session after a restart: %v", err)
		}
		r.Close()
		dir := filepath.Join(d.base, "data", "sessions", id)
		if err := d.c.DeleteSession(ctx, id); err != nil {
			t.Fatal(err)
		}
		if m := sandboxMounts(t, d.base); len(m) != 0 {
			t.Fatalf("mounts left after delete: %+v", m[0])
		}
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Fatalf("session folder left after delete: %v", err)
		}

		small := int64(8)
		if _, err := d.c.CreateSession(ctx, &api.CreateSessionRequest{DiskMB: &small}); !errdefs.IsInvalidArgument(err) {
			t.Fatalf("disk_mb below the minimum must be 400: %v", err)
		}
	})
}

// TestDiskQuotaOff checks sessions work with disk_quota = "none", where
// disk_mb is not enforced and stats say there is no limit.
func TestDiskQuotaOff(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, "disk_quota = \"none\"\n")
	ctx := context.Background()
	disk := int64(16)
	id := d.session(t, &api.CreateSessionRequest{DiskMB: &disk})
	if e := d.sh(t, id, "head -c 20000000 /dev/zero > /workspace/big && echo ok"); e.Stdout != "ok\n" {
		t.Fatalf("without quotas: %s", describe(e))
	}
	st, err := d.c.Stats(ctx, id)
	if err != nil || st.DiskLimitBytes != 0 || st.DiskBytes < 20000000 {
		t.Fatalf("stats without quotas: %+v %v", st, err)
	}
	if m := sandboxMounts(t, d.base); len(m) != 0 {
		t.Fatalf("no mounts without quotas: %+v", m[0])
	}
}
