package integration

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/sandboxd/sandboxd/api"
)

// TestWarmPool checks sessions come from the warm pool when they fit it,
// take the request's owner, labels, environment and limits, start as
// clean as a fresh sandbox, and that the pool refills; /v1/run uses it too;
// a request it cannot serve (another disk size) starts cold.
func TestWarmPool(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, "pool_size = 2\n")
	ctx := context.Background()
	waitFor(t, func() bool { return d.info(t).Pool.Idle == 2 })
	if info := d.info(t); info.Pool.Size != 2 || info.Sessions.Total != 0 {
		t.Fatalf("pooled sandboxes are no sessions: %+v", info)
	}

	mem, pids, cpus := int64(256), int64(64), 0.5
	s, err := d.c.CreateSession(ctx, &api.CreateSessionRequest{MemoryMB: &mem, Pids: &pids, CPUs: &cpus,
		Env: map[string]string{"GREETING": "hello"}, Labels: map[string]string{"team": "ml"}})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(d.log(), `"from":"pool"`) {
		t.Fatalf("the create did not come from the pool:\n%s", d.log())
	}
	if s.Labels["team"] != "ml" || s.Limits.MemoryMB != 256 {
		t.Fatalf("session: %+v", s)
	}
	st, err := d.c.Stats(ctx, s.ID)
	if err != nil || st.MemoryLimitBytes != 256<<20 {
		t.Fatalf("the claimed sandbox takes the request's memory limit: %+v %v", st, err)
	}
	e := d.sh(t, s.ID, "echo $GREETING; ls -A /workspace /tmp | grep -v : | grep -c . ; cat /sys/fs/cgroup/pids.max 2>/dev/null || true")
	if !strings.HasPrefix(e.Stdout, "hello\n0\n") {
		t.Fatalf("environment and clean folders: %q %q", e.Stdout, e.Stderr)
	}
	if e := d.py(t, s.ID, "import os\nos.environ['GREETING'], len([k for k in globals() if not k.startswith('_')])"); result(e) != "('hello', 1)" {
		t.Fatalf("the interpreter starts fresh, with the session's environment: %s", describe(e))
	}
	if e := d.py(t, s.ID, "import os\nfor _ in range(100):\n    if os.fork() == 0:\n        import time; time.sleep(5); os._exit(0)"); e.Status != api.StatusError || !strings.Contains(e.Stderr, "BlockingIOError") {
		t.Fatalf("the claimed sandbox takes the request's pids limit: %s", describe(e))
	}
	waitFor(t, func() bool { return d.info(t).Pool.Idle == 2 })

	run, err := d.c.Run(ctx, &api.RunRequest{Language: "python", Code: "print(6 * 7)"}, nil)
	if err != nil || strings.TrimSpace(run.Stdout) != "42" {
		t.Fatalf("run: %+v %v", run, err)
	}
	if _, body := d.raw(t, "GET", "/metrics", ""); !strings.Contains(string(body), "sandboxd_pool_claims_total 2") {
		t.Fatalf("/v1/run must use the pool too:\n%s", body)
	}

	disk := int64(64)
	if _, err := d.c.CreateSession(ctx, &api.CreateSessionRequest{DiskMB: &disk}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(d.log(), `"from":"cold"`) {
		t.Fatal("a request the pool cannot serve starts cold")
	}
}

// TestPoolFollowsDemand: a burst of creates raises the pool's depth (its
// target) past pool_size; a create the data dir could then not hold takes
// the disk of the sandboxes kept for the burst, which the pool lets go.
func TestPoolFollowsDemand(t *testing.T) {
	t.Parallel()
	// The data dir's budget: 6.5 GiB above the floor (the images take
	// some space of their own meanwhile).
	var st syscall.Statfs_t
	if err := syscall.Statfs(os.TempDir(), &st); err != nil {
		t.Fatal(err)
	}
	freeMiB := int64(st.Bavail) * st.Bsize >> 20
	if freeMiB < 8<<10 {
		t.Fatalf("the test needs 8 GiB free in %s, not %d MiB", os.TempDir(), freeMiB)
	}
	d := startDaemon(t, fmt.Sprintf("pool_size = 1\npool_max_size = 4\nmax_sessions = 20\ndisk_overcommit = 1.0\ndata_dir_min_free_mb = %d\n", freeMiB-6<<10-512), raced)
	ctx := context.Background()
	waitFor(t, func() bool { return d.info(t).Pool.Idle == 1 })
	var wg sync.WaitGroup
	for range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := d.c.CreateSession(ctx, &api.CreateSessionRequest{}); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if p := d.info(t).Pool; p.Size != 1 || p.Target != 3 {
		t.Fatalf("after a burst of 3: %+v", p)
	}
	// 3 GiB of sessions, 2 or 3 GiB kept in the pool (as the budget
	// lets it): a 2 GiB disk fits only if the pool gives way.
	waitFor(t, func() bool { return d.info(t).Pool.Idle >= 2 })
	big := int64(2048)
	if _, err := d.c.CreateSession(ctx, &api.CreateSessionRequest{DiskMB: &big}); err != nil {
		t.Fatalf("a create the pool's surplus stood in the way of: %v", err)
	}
	if p := d.info(t).Pool; p.Idle > 1 || p.Target != 1 {
		t.Fatalf("the pool after giving way: %+v", p)
	}
}
