package daemon

import (
	"context"
	"fmt"
	"slices"
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
// that fails is a reason; any reason makes the status unhealthy (the
// server answers 503). It answers as long as the daemon serves.
func (d *Daemon) Health(ctx context.Context) (*api.Health, error) {
	h := &api.Health{Status: api.HealthOK, Checks: map[string]api.HealthCheck{}}
	check := func(name string, err error) {
		c := api.HealthCheck{OK: err == nil}
		if err != nil {
			c.Detail = err.Error()
			h.Reasons = append(h.Reasons, name+": "+c.Detail)
		}
		h.Checks[name] = c
	}
	check(api.CheckDatabase, d.databaseWritable())
	check(api.CheckCgroups, d.rt.CgroupsWritable())

	var poolErrs []string
	d.tmpl.mu.Lock()
	for _, t := range d.tmpl.byName {
		if t.lastErr != "" {
			poolErrs = append(poolErrs, fmt.Sprintf("template %s: %s", t.def.Name, t.lastErr))
		}
	}
	d.tmpl.mu.Unlock()
	slices.Sort(poolErrs)
	var poolErr error
	if len(poolErrs) > 0 {
		poolErr = fmt.Errorf("%s", poolErrs[0])
		if len(poolErrs) > 1 {
			poolErr = fmt.Errorf("%s (and %d more)", poolErrs[0], len(poolErrs)-1)
		}
	}
	check(api.CheckPools, poolErr)

	free, short, err := d.dataDirSpace()
	h.DataDir = &api.DataDirHealth{MinFreeMB: d.cfg.DataDirMinFreeMB}
	switch {
	case err != nil:
		check(api.CheckDataDir, fmt.Errorf("cannot read its free space: %w", err))
	case short:
		h.DataDir.FreeMB = mib(free)
		check(api.CheckDataDir, fmt.Errorf("%d MiB free, below the floor of %d MiB (data_dir_min_free_mb): no new session disk is made", mib(free), d.cfg.DataDirMinFreeMB))
	default:
		h.DataDir.FreeMB, h.DataDir.OK = mib(free), true
		check(api.CheckDataDir, nil)
	}
	if len(h.Reasons) > 0 {
		h.Status = api.HealthUnhealthy
	}
	return h, nil
}

// databaseWritable is the database check, made at most once per healthTTL.
func (d *Daemon) databaseWritable() error {
	d.healthMu.Lock()
	defer d.healthMu.Unlock()
	if d.healthAt.IsZero() || time.Since(d.healthAt) >= healthTTL {
		d.healthDB, d.healthAt = d.store.Writable(), time.Now()
	}
	return d.healthDB
}
