package daemon

import (
	"fmt"
	"math"
	"strings"

	"github.com/containerd/errdefs"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/daemon/config"
)

// requestLimits are the limits a create request sets.
func requestLimits(r *api.CreateSessionRequest) *api.LimitDefaults {
	return &api.LimitDefaults{MemoryMB: r.MemoryMB, CPUs: r.CPUs, Pids: r.Pids, DiskMB: r.DiskMB, TimeoutS: r.TimeoutS, IdleTimeoutS: r.IdleTimeoutS}
}

// overlay is l with what o sets.
func overlay(l api.Limits, o *api.LimitDefaults) api.Limits {
	if o == nil {
		return l
	}
	if o.MemoryMB != nil {
		l.MemoryMB = *o.MemoryMB
	}
	if o.CPUs != nil {
		l.CPUs = *o.CPUs
	}
	if o.Pids != nil {
		l.Pids = *o.Pids
	}
	if o.DiskMB != nil {
		l.DiskMB = *o.DiskMB
	}
	if o.TimeoutS != nil {
		l.TimeoutS = *o.TimeoutS
	}
	if o.IdleTimeoutS != nil {
		l.IdleTimeoutS = *o.IdleTimeoutS
	}
	return l
}

// resolveLimits merges o over base (the template's defaults) and checks
// every value against the configured maxima.
func resolveLimits(c *config.Config, base api.Limits, o *api.LimitDefaults) (api.Limits, error) {
	l := overlay(base, o)
	m := c.Max
	bad := func(field string, v any, lo, hi any) error {
		return api.Errorf(errdefs.ErrInvalidArgument, "%s is %v: it must be between %v and %v", field, v, lo, hi)
	}
	switch {
	case l.MemoryMB < config.MinMemoryMB || l.MemoryMB > m.MemoryMB:
		return l, bad("memory_mb", l.MemoryMB, config.MinMemoryMB, m.MemoryMB)
	case math.IsNaN(l.CPUs) || l.CPUs < 0.01 || l.CPUs > m.CPUs:
		return l, bad("cpus", l.CPUs, 0.01, m.CPUs)
	case l.Pids < config.MinPids || l.Pids > m.Pids:
		return l, bad("pids", l.Pids, config.MinPids, m.Pids)
	case l.DiskMB < config.MinDiskMB || l.DiskMB > m.DiskMB:
		return l, bad("disk_mb", l.DiskMB, config.MinDiskMB, m.DiskMB)
	case l.TimeoutS < 1 || l.TimeoutS > m.TimeoutS:
		return l, bad("timeout_s", l.TimeoutS, 1, m.TimeoutS)
	case l.IdleTimeoutS < 0 || l.IdleTimeoutS > m.IdleTimeoutS:
		return l, bad("idle_timeout_s", l.IdleTimeoutS, 0, m.IdleTimeoutS)
	}
	return l, nil
}

// checkEnv refuses variable names a process environment cannot hold.
func checkEnv(env map[string]string) error {
	for k, v := range env {
		if k == "" || strings.ContainsAny(k, "=\x00") || strings.ContainsRune(v, 0) {
			return api.Errorf(errdefs.ErrInvalidArgument, "bad environment variable %s: names must be non-empty without '=' or NUL, values without NUL", api.Quote(k))
		}
	}
	return nil
}

func envList(env map[string]string) []string {
	out := make([]string, 0, len(env))
	for k, v := range env {
		out = append(out, fmt.Sprintf("%s=%s", k, v))
	}
	return out
}
