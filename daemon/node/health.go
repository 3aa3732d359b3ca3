package node

import (
	"context"
	"fmt"
	"time"

	"github.com/sandboxd/sandboxd/api"
)

// healthTTL is how long the database check's answer is reused: a probe
// every second from several watchers costs one database sync, not one
// each. The other checks cost little and are made at each call.
const healthTTL = 2 * time.Second

// Health says whether the daemon can do its work, and if not, why: the
// database takes writes, a sandbox's cgroup can be made, the warm pools
// start sandboxes, and the data dir has space above its floor. Each check
// that fails is a reason. A host short of disk space (the data dir below
// its floor, warm pools waiting for space) makes the status degraded
// (200): the daemon serves its sessions and refuses only new disks, so a
// liveness probe must not restart it. Any other failure makes it
// unhealthy (the server answers 503). It answers as long as the daemon
// serves.
func (n *Node) Health(ctx context.Context) (*api.Health, error) {
	h := &api.Health{Status: api.HealthOK, Checks: map[string]api.HealthCheck{}}
	// check records a check; short says its failure is the host's want
	// of disk space, which degrades the daemon without making it
	// unhealthy.
	check := func(name string, err error, short bool) {
		c := api.HealthCheck{OK: err == nil}
		if err != nil {
			c.Detail = err.Error()
			h.Reasons = append(h.Reasons, name+": "+c.Detail)
			switch {
			case !short:
				h.Status = api.HealthUnhealthy
			case h.Status == api.HealthOK:
				h.Status = api.HealthDegraded
			}
		}
		h.Checks[name] = c
	}
	check(api.CheckDatabase, n.databaseWritable(), false)
	check(api.CheckCgroups, n.src.CgroupsWritable(), false)
	poolErr, poolShort := n.src.PoolsHealth()
	check(api.CheckPools, poolErr, poolShort)

	free, short, err := n.src.DataDirSpace()
	h.DataDir = &api.DataDirHealth{MinFreeMB: n.cfg.DataDirMinFreeMB}
	switch {
	case err != nil:
		check(api.CheckDataDir, fmt.Errorf("cannot read its free space: %w", err), false)
	case short:
		h.DataDir.FreeMB = mib(free)
		check(api.CheckDataDir, fmt.Errorf("%d MiB free, below the floor of %d MiB (data_dir_min_free_mb): no new session disk is made", mib(free), n.cfg.DataDirMinFreeMB), true)
	default:
		h.DataDir.FreeMB, h.DataDir.OK = mib(free), true
		check(api.CheckDataDir, nil, false)
	}
	return h, nil
}

// databaseWritable is the database check, made at most once per healthTTL.
func (n *Node) databaseWritable() error {
	n.healthMu.Lock()
	defer n.healthMu.Unlock()
	if n.healthAt.IsZero() || time.Since(n.healthAt) >= healthTTL {
		n.healthDB, n.healthAt = n.src.DatabaseWritable(), time.Now()
	}
	return n.healthDB
}

// mib is n bytes in whole MiB, rounded down (never overstating what is
// free), and 0 below 0.
func mib(n int64) int64 { return max(n, 0) >> 20 }
