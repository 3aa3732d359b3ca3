package integration

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/containerd/errdefs"
	"github.com/moby/sys/mountinfo"
	"golang.org/x/sys/unix"

	"github.com/sandboxd/sandboxd/api"
)

// smallFS makes a filesystem of sizeMB: an ext4 image under t.TempDir(),
// attached to a loop device and mounted there. Everything is undone at
// cleanup, also when the test fails: mounts below it (session disks a
// daemon left), the mount, the loop device.
func smallFS(t *testing.T, sizeMB int64) string {
	t.Helper()
	dir := searchableTempDir(t)
	img, mnt := filepath.Join(dir, "fs.img"), filepath.Join(dir, "mnt")
	if err := os.Mkdir(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(img)
	if err != nil {
		t.Fatal(err)
	}
	err = f.Truncate(sizeMB << 20)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	run := func(name string, args ...string) string {
		t.Helper()
		out, err := exec.Command(name, args...).CombinedOutput()
		if err != nil {
			t.Fatalf("%s %s: %v: %s", name, strings.Join(args, " "), err, out)
		}
		return strings.TrimSpace(string(out))
	}
	run("mkfs.ext4", "-q", "-F", img)
	dev := run("losetup", "--find", "--show", img)
	t.Cleanup(func() {
		if out, err := exec.Command("losetup", "-d", dev).CombinedOutput(); err != nil {
			t.Errorf("losetup -d %s: %v: %s", dev, err, out)
		}
	})
	if err := unix.Mount(dev, mnt, "ext4", 0, ""); err != nil {
		t.Fatalf("mount %s: %v", dev, err)
	}
	t.Cleanup(func() {
		unmountUnder(t, mnt) // deepest first, mnt itself last
	})
	return mnt
}

// healthOf is the daemon's /v1/health.
func healthOf(t *testing.T, d *daemon) *api.Health {
	t.Helper()
	h, err := d.c.HealthStatus(context.Background())
	if h == nil || (err != nil) != (h.Status == api.HealthUnhealthy) {
		t.Fatal(h, err)
	}
	return h
}

// postCreate sends a create and returns the answer's status, Retry-After
// and error body.
func postCreate(t *testing.T, d *daemon, body string) (int, string, api.ErrorBody) {
	t.Helper()
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var dl net.Dialer
		return dl.DialContext(ctx, "unix", d.socket)
	}}}
	defer hc.CloseIdleConnections()
	resp, err := hc.Post("http://sandboxd/v1/sessions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var eb api.ErrorBody
	if resp.StatusCode == http.StatusCreated {
		var s api.Session
		if err := json.Unmarshal(b, &s); err == nil {
			t.Cleanup(func() { _ = d.c.DeleteSession(context.Background(), s.ID) })
		}
	} else {
		_ = json.Unmarshal(b, &eb)
	}
	return resp.StatusCode, resp.Header.Get("Retry-After"), eb
}

// TestFullDataDir is issue 14: the data dir on a 96 MB filesystem. A disk
// it cannot hold is refused with a 429 that says what is free; one that
// fits works, and filling it fails inside the sandbox with ENOSPC while the
// host's filesystem and the session's stay healthy, its data intact; health
// reports the data dir short of space once it is below its floor.
func TestFullDataDir(t *testing.T) {
	t.Parallel()
	mnt := smallFS(t, 96)
	data := filepath.Join(mnt, "data")
	d := startDaemon(t, "data_dir_min_free_mb = 16\ndisk_overcommit = 1.0\n", func(d *daemon) { d.dataDir = data })
	ctx := context.Background()

	if h := healthOf(t, d); h.Status != api.HealthOK || h.DataDir == nil || !h.DataDir.OK || h.DataDir.MinFreeMB != 16 {
		t.Fatalf("health of a data dir with room: %+v %+v", h, h.DataDir)
	}

	// 200 MiB on a 96 MB filesystem: refused, saying what is free.
	status, retry, eb := postCreate(t, d, `{"disk_mb": 200}`)
	if status != http.StatusTooManyRequests || eb.Error.Code != api.CodeResourceExhausted || retry == "" {
		t.Fatalf("a 200 MiB disk: %d Retry-After %q %+v", status, retry, eb)
	}
	if msg := eb.Error.Message; !strings.Contains(msg, "MiB free") || !strings.Contains(msg, "200 MiB disk does not fit") || !strings.Contains(msg, "data_dir_min_free_mb") {
		t.Fatalf("the refusal's sentence: %s", msg)
	}
	if list, _ := d.c.ListSessions(ctx, nil); len(list) != 0 {
		t.Fatalf("a refused create left a session: %+v", list)
	}

	// 40 MiB fits; a second one does not while the first's is promised.
	id := d.session(t, &api.CreateSessionRequest{DiskMB: ptr(int64(40))})
	if status, _, eb := postCreate(t, d, `{"disk_mb": 40}`); status != http.StatusTooManyRequests {
		t.Fatalf("a second 40 MiB disk on what is left: %d %+v", status, eb)
	}

	// Data written, then the disk filled: ENOSPC inside, nothing worse.
	e := d.sh(t, id, "head -c 8388608 /dev/urandom > /workspace/keep && sha256sum /workspace/keep | cut -c1-64 && sync")
	if e.Status != api.StatusOK {
		t.Fatal(describe(e))
	}
	sum := strings.TrimSpace(e.Stdout)
	e = d.sh(t, id, "dd if=/dev/zero of=/workspace/fill bs=1M count=100 2>&1; sync; echo synced")
	if !strings.Contains(e.Stdout, "No space left on device") || !strings.Contains(e.Stdout, "synced") {
		t.Fatalf("filling the session's disk: %s", describe(e))
	}
	// An upload into the full disk is a 429, not a 500.
	if _, err := d.c.PutFile(ctx, id, "/workspace/more", strings.NewReader(strings.Repeat("x", 4<<20))); !errdefs.IsResourceExhausted(err) {
		t.Fatalf("an upload into a full disk: %v", err)
	}

	// The host filesystem and the session's are mounted read-write, and
	// what was written reads back whole.
	for _, p := range []string{mnt, filepath.Join(data, "sessions", id, "fs")} {
		var st unix.Statfs_t
		if err := unix.Statfs(p, &st); err != nil {
			t.Fatal(err)
		}
		if st.Flags&unix.ST_RDONLY != 0 {
			t.Fatalf("%s went read-only", p)
		}
	}
	if m, err := mountinfo.GetMounts(mountinfo.SingleEntryFilter(filepath.Join(data, "sessions", id, "fs"))); err != nil || len(m) != 1 || !strings.HasPrefix(m[0].Options, "rw") {
		t.Fatalf("the session's disk mount: %+v %v", m, err)
	}
	e = d.sh(t, id, "rm /workspace/fill && echo ok > /workspace/after && sha256sum /workspace/keep | cut -c1-64")
	if e.Status != api.StatusOK || strings.TrimSpace(e.Stdout) != sum {
		t.Fatalf("the data after the disk was full (want %s): %s", sum, describe(e))
	}

	// Below the floor, health says so (the daemon still serves).
	var st unix.Statfs_t
	if err := unix.Statfs(mnt, &st); err != nil {
		t.Fatal(err)
	}
	hog := filepath.Join(mnt, "hog")
	t.Cleanup(func() { os.Remove(hog) })
	take := int64(st.Bavail)*st.Bsize - 8<<20 // leave 8 MiB: under the 16 MiB floor
	f, err := os.Create(hog)
	if err != nil {
		t.Fatal(err)
	}
	err = unix.Fallocate(int(f.Fd()), 0, 0, take)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	h := healthOf(t, d)
	if h.Status != api.HealthDegraded || h.DataDir == nil || h.DataDir.OK || h.DataDir.FreeMB >= 16 || !strings.HasPrefix(strings.Join(h.Reasons, ";"), "data_dir: ") {
		t.Fatalf("health below the floor: %+v %+v", h, h.DataDir)
	}
	if out, _, _ := d.ctl(t, "", "doctor", "--data-dir", data); !strings.Contains(out, "below the floor") {
		t.Fatalf("doctor below the floor:\n%s", out)
	}
	if status, _, eb := postCreate(t, d, `{"disk_mb": 16}`); status != http.StatusTooManyRequests || !strings.Contains(eb.Error.Message, "MiB free") {
		t.Fatalf("a create below the floor: %d %+v", status, eb)
	}
	os.Remove(hog)
	if h := healthOf(t, d); h.Status != api.HealthOK {
		t.Fatalf("health once space is back: %+v %+v", h, h.DataDir)
	}
}

// TestPoolDiskReadOnly: a pooled sandbox whose disk went read-only (ext4
// remounts itself so when it meets an error, as when the host's disk
// filled under it) is not handed out: the create gets a writable
// /workspace.
func TestPoolDiskReadOnly(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, "pool_size = 1\n")
	waitFor(t, func() bool { return d.info(t).Pool.Idle == 1 })
	ents, err := os.ReadDir(filepath.Join(d.dataDir, "sessions"))
	if err != nil || len(ents) != 1 {
		t.Fatalf("the pooled sandbox's folder: %v %v", ents, err)
	}
	sick := ents[0].Name()
	fs := filepath.Join(d.dataDir, "sessions", sick, "fs")
	if err := unix.Mount("", fs, "", unix.MS_REMOUNT|unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOATIME, ""); err != nil {
		t.Fatalf("remount %s read-only: %v", fs, err)
	}
	id := d.session(t, nil)
	if id == sick {
		t.Fatal("the create got the pooled sandbox whose disk is read-only")
	}
	if e := d.sh(t, id, "echo ok > /workspace/f && cat /workspace/f"); strings.TrimSpace(e.Stdout) != "ok" {
		t.Fatalf("the session's /workspace: %s", describe(e))
	}
	if _, err := os.Stat(filepath.Join(d.dataDir, "sessions", sick)); !os.IsNotExist(err) {
		t.Fatalf("the read-only sandbox's folder is left: %v", err)
	}
}

// TestDiskSharePerUID is issue 30's fair disk, end to end through
// sandboxctl on a 256 MB data dir: one user's sessions' disks stay within
// disk_share_per_uid of what the data dir can promise, so another user
// can still create; the refusal says the share and what the user holds;
// root is bounded by the data dir alone.
func TestDiskSharePerUID(t *testing.T) {
	t.Parallel()
	mnt := smallFS(t, 256)
	d := startDaemon(t, "data_dir_min_free_mb = 16\ndisk_overcommit = 1.0\ndisk_share_per_uid = 0.5\n", func(d *daemon) { d.dataDir = filepath.Join(mnt, "data") })
	if err := os.Chmod(d.socket, 0o666); err != nil {
		t.Fatal(err)
	}
	alice := &syscall.Credential{Uid: 54331, Gid: 54331}
	bob := &syscall.Credential{Uid: 54332, Gid: 54332}
	create := func(who *syscall.Credential, disk string) (string, string, int) {
		t.Helper()
		out, stderr, code := runCtl(t, d.socket, who, "", "create", "--disk", disk)
		if code == 0 {
			id := strings.TrimSpace(out)
			t.Cleanup(func() { runCtl(t, d.socket, nil, "", "rm", id) })
		}
		return out, stderr, code
	}
	// About 195 MiB can be promised (212 free, a 16 MiB floor): alice's
	// share is about 97.
	if _, stderr, code := create(alice, "90M"); code != 0 {
		t.Fatalf("alice within her share: %d %s", code, stderr)
	}
	_, stderr, code := create(alice, "40M")
	if code == 0 || !strings.Contains(stderr, "uid 54331's sessions hold 90 MiB of disk, and a 40 MiB disk does not fit in its share of") ||
		!strings.Contains(stderr, "disk_share_per_uid 0.5") || !strings.Contains(stderr, "delete sessions of yours") {
		t.Fatalf("alice past her share: %d %s", code, stderr)
	}
	if _, stderr, code := create(bob, "40M"); code != 0 {
		t.Fatalf("bob beside alice: %d %s", code, stderr)
	}
	// Root: past a share, within what the data dir can hold.
	if _, stderr, code := create(nil, "60M"); code != 0 {
		t.Fatalf("root: %d %s", code, stderr)
	}
}
