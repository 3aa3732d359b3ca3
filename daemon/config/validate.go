package config

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/isolation/idmap"
	"github.com/sandboxd/sandboxd/isolation/volume"
	"github.com/sandboxd/sandboxd/seccomp"
)

// Smallest limits a sandbox can run with: below them the interpreter does
// not start, which would look like a daemon bug rather than a bad request.
// The defaults must respect them, and so must every session's limits
// (the daemon's resolveLimits).
const (
	MinMemoryMB = 32
	MinPids     = 16
	// MinDiskMB is the smallest filesystem with room for ext4's journal.
	MinDiskMB = volume.MinBytes >> 20
)

// maxAnswerLimit bounds max_answer_bytes: an answer is one line from the
// agent, and isolation reads lines of at most 64 MiB (base64 and JSON
// escaping take room beyond the bytes counted).
const maxAnswerLimit = 32 << 20

// minHistoryRecord is the smallest history_record_bytes: room for an
// error's traceback and the heads of the output (the daemon's historyCut).
const minHistoryRecord = 4 << 10

// Validate checks the values make sense together.
func (c *Config) Validate() error {
	var errs []error
	check := func(ok bool, format string, args ...any) {
		if !ok {
			errs = append(errs, fmt.Errorf(format, args...))
		}
	}
	check(c.Socket != "", "socket must be set")
	check(c.DataDir != "", "data_dir must be set")
	check(c.RunDir != "", "run_dir must be set")
	if err := checkMetricsAddr(c.MetricsAddr); err != nil {
		errs = append(errs, err)
	}
	check(c.DiskQuota == volume.Loop || c.DiskQuota == volume.Plain, "disk_quota must be %q or %q", volume.Loop, volume.Plain)
	check(c.DataDirMinFreeMB >= 0, "data_dir_min_free_mb must be 0 (no floor) or more")
	check(c.DiskOvercommit >= 1, "disk_overcommit must be 1 (no overcommit) or more")
	check(c.DiskSharePerUID >= 0 && c.DiskSharePerUID <= 1, "disk_share_per_uid must be between 0 (half) and 1 (no bound but the data dir's)")
	check(c.SandboxUID > 0 && c.SandboxGID > 0, "sandbox_uid and sandbox_gid must be above 0: sandboxed code never runs as root")
	check(c.MaxSessions > 0, "max_sessions must be above 0")
	check(c.MaxSessionsPerUID > 0, "max_sessions_per_uid must be above 0")
	check(c.MaxConcurrentExecs > 0, "max_concurrent_execs must be above 0")
	check(c.MaxUploadBytes > 0, "max_upload_bytes must be above 0")
	check(c.MaxOutputBytes > 0, "max_output_bytes must be above 0")
	check(c.MaxAnswerBytes > 0 && c.MaxAnswerBytes <= maxAnswerLimit, "max_answer_bytes must be above 0 and at most %d", maxAnswerLimit)
	check(c.MaxRequestBytes > 0, "max_request_bytes must be above 0")
	check(c.HistoryLimit > 0, "history_limit must be above 0")
	check(c.HistoryRecordBytes >= minHistoryRecord, "history_record_bytes must be at least %d", minHistoryRecord)
	check(c.HistoryTotalLimit > 0, "history_total_limit must be above 0")
	check(c.InterruptGraceS > 0, "interrupt_grace_s must be above 0")
	check(c.PoolMaxTotal >= 0, "pool_max_total must be 0 or more")
	check(c.PoolSize >= 0 && c.PoolSize <= c.PoolMaxTotal, "pool_size must be between 0 and pool_max_total")
	check(c.PoolMaxSize >= 0, "pool_max_size must be 0 or more")
	check(c.PoolSharePerUID >= 0 && c.PoolSharePerUID <= c.PoolMaxTotal, "pool_share_per_uid must be between 0 (half of pool_max_total) and pool_max_total (%d)", c.PoolMaxTotal)
	check(c.MaxTemplateMB > 0, "max_template_mb must be above 0")
	check(c.ShutdownGraceS >= 0, "shutdown_grace_s must be 0 or more")
	check(c.LXCFSDir == "" || filepath.IsAbs(c.LXCFSDir), "lxcfs_dir must be an absolute path, or \"\" to show sandboxes the host's /proc/meminfo")
	check(c.DefaultRuntime == api.RuntimeRunc || c.DefaultRuntime == api.RuntimeRunsc, "default_runtime must be %q or %q", api.RuntimeRunc, api.RuntimeRunsc)
	check(c.Runsc.Path == "" || filepath.IsAbs(c.Runsc.Path), "runsc.path must be an absolute path, or \"\" to find runsc on PATH")
	check(slices.Contains([]string{"ptrace", "systrap", "kvm"}, c.Runsc.Platform), "runsc.platform must be \"ptrace\", \"systrap\" or \"kvm\"")
	check(c.MaxSessionLifetimeS >= 0, "max_session_lifetime_s must be 0 (no limit) or more")
	check(c.IdleAction == IdleStop || c.IdleAction == IdlePause || c.IdleAction == IdleHibernate, "idle_action must be %q, %q or %q", IdleStop, IdlePause, IdleHibernate)
	d, m := c.Defaults, c.Max
	check(d.MemoryMB >= MinMemoryMB && d.MemoryMB <= m.MemoryMB, "defaults.memory_mb must be between %d and max.memory_mb", MinMemoryMB)
	check(d.CPUs > 0 && d.CPUs <= m.CPUs, "defaults.cpus must be above 0 and at most max.cpus")
	check(d.Pids >= MinPids && d.Pids <= m.Pids, "defaults.pids must be between %d and max.pids", MinPids)
	check(d.DiskMB >= MinDiskMB && d.DiskMB <= m.DiskMB, "defaults.disk_mb must be between %d and max.disk_mb", MinDiskMB)
	check(d.TimeoutS > 0 && d.TimeoutS <= m.TimeoutS, "defaults.timeout_s must be above 0 and at most max.timeout_s")
	check(d.IdleTimeoutS >= 0 && d.IdleTimeoutS <= m.IdleTimeoutS, "defaults.idle_timeout_s must be between 0 and max.idle_timeout_s")
	if c.UserNS.Enabled {
		r := c.UserNS.IDRange()
		if err := r.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("userns: %w", err))
		} else {
			end := uint64(r.Base) + uint64(r.Blocks)*idmap.BlockSize
			check(uint64(c.SandboxUID) < uint64(r.Base) || uint64(c.SandboxUID) >= end, "sandbox_uid must lie outside the userns id range")
		}
	}
	if err := c.Network.validate(); err != nil {
		errs = append(errs, err)
	}
	if err := api.CheckLabels(c.Node.Labels); err != nil {
		errs = append(errs, fmt.Errorf("node.labels: %w", err))
	}
	if _, err := seccomp.Profile(c.Seccomp); err != nil {
		errs = append(errs, err)
	}
	if err := c.MCP.Validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
