package daemon

import (
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/daemon/config"
)

// TestHealth: healthy when every check passes; a cgroup folder that takes
// no cgroup and a pool that cannot start sandboxes each make it unhealthy
// with their reason, and it is healthy again once they recover.
func TestHealth(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *config.Config) { c.PoolSize = 1 })
	d := e.start()
	h, err := d.node.Health(root)
	if err != nil || h.Status != api.HealthOK || len(h.Reasons) != 0 || len(h.Checks) != 4 || !h.Checks[api.CheckDatabase].OK {
		t.Fatalf("healthy: %+v %v", h, err)
	}

	waitPool(t, d, 1)
	e.h.mu.Lock()
	e.h.cgroupErr = errors.New("read-only file system")
	e.h.failStart = errors.New("no more pids")
	e.h.mu.Unlock()
	mustCreate(t, d, as(1000)) // from the pool, whose refill fails
	want := regexp.MustCompile(`^cgroups: read-only file system\|pools: template python: the warm pool cannot start a sandbox: .*no more pids$`)
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		h, _ = d.node.Health(root)
		if want.MatchString(strings.Join(h.Reasons, "|")) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("unhealthy: %+v", h)
		}
	}
	if h.Status != api.HealthUnhealthy || h.Checks[api.CheckCgroups].OK || h.Checks[api.CheckPools].OK {
		t.Fatalf("unhealthy: %+v", h)
	}

	e.h.mu.Lock()
	e.h.cgroupErr, e.h.failStart = nil, nil
	e.h.mu.Unlock()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if h, _ = d.node.Health(root); h.Status == api.HealthOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not healthy again once the pool refills: %+v", h)
		}
	}
}
