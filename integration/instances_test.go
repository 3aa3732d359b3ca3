package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sandboxd/sandboxd/api"
)

// TestDeadPooledSandboxes kills the warm pool's sandboxes from the host,
// then creates 20 sessions at once: every create answers 201 with a
// session that runs code (a dead pooled sandbox is replaced, never
// claimed), and after the deletes nothing of them is left: id blocks,
// mounts, loop devices, cgroups.
func TestDeadPooledSandboxes(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, "pool_size = 2\nmax_sessions = 40\nmax_sessions_per_uid = 40\n", raced)
	ctx := context.Background()
	waitPoolReady(t, d, 2)
	info, err := d.c.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	mounts, loops, blocks := d.mounts(t), d.loopDevices(), info.UserNS.InUse
	cgroupsBefore := countCgroups(t, d)
	// Kill every process of the pooled sandboxes, as an OOM killer or an
	// operator would.
	killed := 0
	for _, id := range sandboxCgroupProcs(d) {
		for _, pid := range sandboxProcs(t, id) {
			if n, err := strconv.Atoi(pid); err == nil && syscall.Kill(n, syscall.SIGKILL) == nil {
				killed++
			}
		}
	}
	if killed == 0 {
		t.Fatal("found no pooled sandbox process to kill")
	}
	// The emulated VM (-short) starts sandboxes ~10 times slower: 20 at
	// once there overran the agent's start timeout on a loaded host.
	n := 20
	if testing.Short() {
		n = 6
	}
	var wg sync.WaitGroup
	ids := make([]string, n)
	errs := make([]error, n)
	for i := range ids {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			s, err := d.c.CreateSession(ctx, &api.CreateSessionRequest{})
			if err != nil {
				errs[i] = err
				return
			}
			ids[i] = s.ID
			e, err := d.c.Exec(ctx, s.ID, &api.ExecRequest{Language: "python", Code: fmt.Sprintf("%d * 2", i)}, nil)
			if err != nil || result(e) != strconv.Itoa(i*2) {
				errs[i] = fmt.Errorf("exec: %s %v", describe(e), err)
			}
		}(i)
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("session %d: %v", i, err)
		}
	}
	for _, id := range ids {
		if id != "" {
			if err := d.c.DeleteSession(ctx, id); err != nil {
				t.Error(err)
			}
		}
	}
	waitPoolReady(t, d, 2)
	info, err = d.c.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.UserNS.InUse != blocks {
		t.Errorf("id blocks in use: %d, were %d", info.UserNS.InUse, blocks)
	}
	// A refill may still be under way (its disk mounted, its sandbox not
	// ready): what is left is what stays once the pool is still.
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if d.mounts(t) == mounts && d.loopDevices() <= loops && countCgroups(t, d) == cgroupsBefore {
			break
		}
	}
	if n := d.mounts(t); n != mounts {
		t.Errorf("mounts: %d, were %d", n, mounts)
	}
	if n := d.loopDevices(); n > loops {
		t.Errorf("loop devices: %d, were %d:\n%s", n, loops, d.loopHolders())
	}
	d.checkMountNS(t)
	if n := countCgroups(t, d); n != cgroupsBefore {
		t.Errorf("sandbox cgroups: %d, were %d", n, cgroupsBefore)
	}
	if _, body := d.raw(t, "GET", "/metrics", ""); !strings.Contains(string(body), `sandboxd_pool_sandbox_deaths_total{template="python"}`) {
		t.Errorf("pool deaths not counted in /metrics")
	}
}

// waitPoolReady waits until the python template's pool holds n sandboxes.
func waitPoolReady(t *testing.T, d *daemon, n int) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		if info, err := d.c.Info(context.Background()); err == nil && info.Pool.Templates["python"].Idle == n {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("the warm pool never held %d sandboxes", n)
}

// countCgroups counts the sandbox cgroups of daemon d in one hierarchy.
func countCgroups(t *testing.T, d *daemon) int {
	t.Helper()
	ents, err := os.ReadDir(sandboxCgroupParent(t, d))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	n := 0
	for _, e := range ents {
		if e.IsDir() {
			n++
		}
	}
	return n
}

// TestTwoDaemons runs two daemons on one host with their own sockets and
// data dirs and one run dir (as two daemons with the default run dir):
// each creates sessions and restarts (sweeping what it finds); neither
// loses a sandbox, and no host id is used by both.
func TestTwoDaemons(t *testing.T) {
	t.Parallel()
	a := startDaemon(t, "")
	b := startDaemon(t, "", func(d *daemon) { d.runDir = a.runDir })
	ctx := context.Background()
	sessions := map[*daemon][]string{}
	for _, d := range []*daemon{a, b} {
		for i := 0; i < 3; i++ {
			id := d.session(t, nil)
			if e := d.py(t, id, fmt.Sprintf("v = %d", i)); e.Status != api.StatusOK {
				t.Fatal(describe(e))
			}
			sessions[d] = append(sessions[d], id)
		}
	}
	// Each restarts in turn, the other's sandboxes running: a crash, so
	// that the next start sweeps.
	for _, d := range []*daemon{a, b, a} {
		d.crash()
		d.launch()
		for _, o := range []*daemon{a, b} {
			for i, id := range sessions[o] {
				if e := o.py(t, id, "v"); result(e) != strconv.Itoa(i) {
					t.Fatalf("after %s restarted, session %s of the other daemon: %s", d.base, id, describe(e))
				}
			}
		}
	}
	ia, err := a.c.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ib, err := b.c.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !ia.UserNS.Enabled || !ib.UserNS.Enabled {
		t.Fatal("user namespaces are off")
	}
	endA := uint64(ia.UserNS.IDBase) + uint64(ia.UserNS.Blocks)*uint64(ia.UserNS.BlockSize)
	endB := uint64(ib.UserNS.IDBase) + uint64(ib.UserNS.Blocks)*uint64(ib.UserNS.BlockSize)
	if uint64(ia.UserNS.IDBase) < endB && uint64(ib.UserNS.IDBase) < endA {
		t.Fatalf("the daemons' id ranges overlap: %d-%d and %d-%d", ia.UserNS.IDBase, endA-1, ib.UserNS.IDBase, endB-1)
	}
	// And every sandbox process runs as a host uid of its own daemon's
	// range.
	for _, d := range []*daemon{a, b} {
		info := ia
		if d == b {
			info = ib
		}
		for _, id := range sandboxCgroupProcs(d) {
			for _, pid := range sandboxProcs(t, id) {
				uid := procUID(t, pid)
				end := uint64(info.UserNS.IDBase) + uint64(info.UserNS.Blocks)*uint64(info.UserNS.BlockSize)
				if uid >= 0 && (uint64(uid) < uint64(info.UserNS.IDBase) || uint64(uid) >= end) {
					t.Errorf("process %s of %s runs as uid %d, outside its daemon's range", pid, id, uid)
				}
			}
		}
	}
	// Each daemon's state folder is its own.
	if a.stateDir() == b.stateDir() || a.cgroupName() == b.cgroupName() {
		t.Fatal("the daemons share a state folder or a cgroup folder")
	}
	if _, err := os.Stat(filepath.Join(leaseDir, a.instance()+".json")); err != nil {
		t.Errorf("daemon a has no id range lease: %v", err)
	}
}

// procUID is the real uid of process pid, -1 if it is gone.
func procUID(t *testing.T, pid string) int {
	b, err := os.ReadFile(filepath.Join("/proc", pid, "status"))
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) > 1 && f[0] == "Uid:" {
			n, _ := strconv.Atoi(f[1])
			return n
		}
	}
	return -1
}
