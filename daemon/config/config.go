// Package config is the daemon's configuration: the TOML file given with
// --config, its defaults, and the checks a file must pass before a daemon
// starts on it (sandboxd --validate runs them alone).
//
// It is a leaf: it imports nothing under daemon/, only the API's types and
// the leaves of isolation and seccomp whose values the file names. The
// daemon, its owners (mcpgateway, …) and cmd/sandboxd all read it, so the
// arrows point into it and never out: a package that needs a setting
// takes this package's type, never *Daemon, and checking a config file
// (sandboxd --validate, the config tests) needs nothing of the daemon's
// (as moby's daemon/config).
package config

import (
	"runtime"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/isolation/idmap"
	"github.com/sandboxd/sandboxd/isolation/volume"
	"github.com/sandboxd/sandboxd/seccomp"
)

// Config is the daemon's configuration: the TOML file given with --config
// (see contrib/config.toml for every key), then the command-line flags.
type Config struct {
	Socket      string `toml:"socket"`
	SocketGroup string `toml:"socket_group"`
	DataDir     string `toml:"data_dir"`
	RunDir      string `toml:"run_dir"`
	LogLevel    string `toml:"log_level"`
	// MetricsAddr, if set ("127.0.0.1:9464"), is a TCP address where the
	// daemon serves GET /metrics too (and nothing else: 404), for a
	// scraper on the host; "" (the default): the socket's GET /metrics
	// alone. It has no authentication: bind it to loopback, or to an
	// interface only a trusted network reaches, never a public one. Port
	// 0 takes a free port (logged as "serving metrics"). A bad address
	// fails --validate and the start.
	MetricsAddr string `toml:"metrics_addr"`
	// Supervisor is the native supervisor sandboxes start with
	// (isolation.Options.Supervisor), found by the daemon's command beside
	// it, not configured: "" starts them with the Python one.
	Supervisor string `toml:"-"`

	// DiskQuota is how disk_mb is enforced: "loop" (a filesystem of that
	// size per session) or "none".
	DiskQuota volume.Kind `toml:"disk_quota"`
	// DataDirMinFreeMB is what must stay free on the data dir's
	// filesystem: a create (or a pool refill) whose disk would take the
	// space promised to disks below it is refused (0: no floor; the
	// promises are still checked against what is free).
	DataDirMinFreeMB int64 `toml:"data_dir_min_free_mb"`
	// DiskOvercommit is how many MiB of sparse session disks may be
	// promised per MiB free above the floor (1: never promise more than
	// the host has). Above 1, sessions that fill their disks together can
	// fill the host's, and their filesystems then fail.
	DiskOvercommit float64 `toml:"disk_overcommit"`
	// DiskSharePerUID bounds the disks one user's sessions hold together,
	// as a fraction of what the data dir can promise (what is promised
	// and what may still be), so that one user cannot take every disk
	// (0: half, as pool_share_per_uid is half of pool_max_total; 1: no
	// bound but the data dir's). A fraction, not a size: the data dirs of
	// a fleet differ, and it keeps its meaning as their space changes.
	// Root's sessions are the operator's and bounded by the data dir alone.
	DiskSharePerUID float64 `toml:"disk_share_per_uid"`

	// SandboxUID and SandboxGID run sandboxed code: ids no host user has.
	SandboxUID int `toml:"sandbox_uid"`
	SandboxGID int `toml:"sandbox_gid"`

	MaxSessions        int   `toml:"max_sessions"`
	MaxSessionsPerUID  int   `toml:"max_sessions_per_uid"`
	MaxConcurrentExecs int   `toml:"max_concurrent_execs"`
	MaxUploadBytes     int64 `toml:"max_upload_bytes"`
	MaxOutputBytes     int64 `toml:"max_output_bytes"`
	// MaxAnswerBytes bounds an execution's whole answer: stdout, stderr,
	// the error, the result and every output.
	MaxAnswerBytes  int64 `toml:"max_answer_bytes"`
	MaxRequestBytes int64 `toml:"max_request_bytes"`
	HistoryLimit    int   `toml:"history_limit"`
	// HistoryRecordBytes bounds what the history keeps of one execution:
	// an answer may be max_answer_bytes, and history_total_limit of them
	// would fill a disk.
	HistoryRecordBytes int64 `toml:"history_record_bytes"`
	HistoryTotalLimit  int   `toml:"history_total_limit"`
	// InterruptGraceS is how long interrupted Python gets to stop before
	// the interpreter is killed and restarted.
	InterruptGraceS float64 `toml:"interrupt_grace_s"`

	// PoolSize is how many sandboxes of the default template the daemon
	// keeps started ahead of demand (0: none).
	PoolSize int `toml:"pool_size"`
	// PoolMaxSize is how many the python template's pool may keep when
	// demand is higher: a burst of creates raises its depth up to this
	// (within pool_max_total) for the daemon's poolDemandMemory (0, or below
	// pool_size: the pool stays at pool_size).
	PoolMaxSize int `toml:"pool_max_size"`
	// PoolMaxTotal bounds the sandboxes all warm pools together keep
	// (the python template's pool_size and every added template's).
	PoolMaxTotal int `toml:"pool_max_total"`
	// PoolSharePerUID bounds the sandboxes the pools of one user's
	// templates keep together, so that one user cannot take every slot of
	// pool_max_total (0: half of it, rounded up; see PoolShare). Root's
	// templates, the python template among them, are the operator's and
	// count against pool_max_total alone.
	PoolSharePerUID int `toml:"pool_share_per_uid"`
	// MaxTemplateMB bounds the files of one imported root filesystem.
	MaxTemplateMB int64 `toml:"max_template_mb"`
	// ShutdownStopsSessions makes the daemon stop every session when it
	// stops; by default sessions run on and the next daemon takes them back.
	ShutdownStopsSessions bool `toml:"shutdown_stops_sessions"`
	// MaxSessionLifetimeS stops a session this long after its creation and
	// refuses to start it again (0: no limit).
	MaxSessionLifetimeS int `toml:"max_session_lifetime_s"`
	// IdleAction is what a session's idle timeout does: "stop" (its
	// processes end, the workspace stays), "pause" (frozen, state kept)
	// or "hibernate" (memory to disk, runsc; else pause).
	IdleAction string `toml:"idle_action"`
	// ShutdownGraceS is how long a stopping daemon lets requests in flight
	// finish.
	ShutdownGraceS float64 `toml:"shutdown_grace_s"`
	// RestartLostSessions starts afresh, at daemon start, sessions whose
	// sandbox did not survive (instead of marking them failed).
	RestartLostSessions bool `toml:"restart_lost_sessions"`
	// LXCFSDir is where lxcfs is mounted: sandboxes see its /proc/meminfo,
	// cpuinfo, stat, uptime (and loadavg, diskstats, swaps,
	// /sys/devices/system/cpu/online), computed for their own limits,
	// instead of the host's. "" turns that off; where lxcfs does not serve
	// there but is installed, the daemon runs its own (daemon/procview.go), else
	// sandboxes show the host's files, with one warning at start.
	LXCFSDir string `toml:"lxcfs_dir"`
	// DefaultRuntime runs sessions that name no runtime (nor their
	// template): "runc" or "runsc". StrictRuntime makes it the only one:
	// the daemon refuses to start when it is unusable, and refuses
	// sessions and templates that ask for another.
	DefaultRuntime string `toml:"default_runtime"`
	StrictRuntime  bool   `toml:"strict_runtime"`
	Runsc          Runsc  `toml:"runsc"`

	Defaults Limits         `toml:"defaults"`
	Max      Limits         `toml:"max"`
	Seccomp  seccomp.Config `toml:"seccomp"`
	UserNS   UserNS         `toml:"userns"`
	Network  Network        `toml:"network"`
	Node     Node           `toml:"node"`
	// MCP is the host's MCP servers that sessions may be granted (see
	// package daemon/mcpgateway).
	MCP MCP `toml:"mcp"`
}

// What an idle timeout does to a session (idle_action).
const (
	IdleStop  = "stop"
	IdlePause = "pause"
	// IdleHibernate saves an idle session's memory to disk (runsc); a
	// session that cannot hibernate is paused.
	IdleHibernate = "hibernate"
)

// Node is what GET /v1/node tells schedulers of this daemon beyond
// what it measures.
type Node struct {
	// Labels are the operator's, for schedulers' constraints ({zone =
	// "a", gpu = "none"}); the same rules as session labels.
	Labels map[string]string `toml:"labels"`
}

// Runsc is gVisor's runsc, the second runtime (docs/runsc.md).
type Runsc struct {
	// Path is the runsc binary ("": runsc on PATH).
	Path string `toml:"path"`
	// Platform is gVisor's: "ptrace" (works anywhere), "systrap" (newer
	// builds) or "kvm" (needs hardware virtualization).
	Platform string `toml:"platform"`
	// Flags are more global flags for every runsc call.
	Flags []string `toml:"flags"`
}

// UserNS is the user namespace every sandbox gets: a block of
// idmap.BlockSize host ids per session, from the range Blocks blocks long
// that starts at IDBase.
type UserNS struct {
	Enabled bool   `toml:"enabled"`
	IDBase  uint32 `toml:"id_base"`
	Blocks  int    `toml:"blocks"`
	// LeaseDir is the folder, shared by every sandboxd of the host, where
	// each leases its id range (package idmap), so no two daemons' sandboxes
	// share host ids. When the range overlaps another daemon's, a daemon
	// whose config does not set id_base moves to the next free one; one
	// that sets it refuses to start.
	LeaseDir string `toml:"lease_dir"`
	// explicit says the config file set id_base.
	explicit bool
}

// IDRange is the configured range of host ids.
func (u UserNS) IDRange() idmap.Range { return idmap.Range{Base: u.IDBase, Blocks: u.Blocks} }

// IDBaseSet says the file set id_base: the range is pinned, and a daemon
// whose range another holds refuses to start instead of moving.
func (u UserNS) IDBaseSet() bool { return u.explicit }

// Limits is a set of session limits in the config file.
type Limits struct {
	MemoryMB     int64   `toml:"memory_mb"`
	CPUs         float64 `toml:"cpus"`
	Pids         int64   `toml:"pids"`
	DiskMB       int64   `toml:"disk_mb"`
	TimeoutS     int     `toml:"timeout_s"`
	IdleTimeoutS int     `toml:"idle_timeout_s"`
}

// API is the limits as the API answers them.
func (l Limits) API() api.Limits {
	return api.Limits{MemoryMB: l.MemoryMB, CPUs: l.CPUs, Pids: l.Pids, DiskMB: l.DiskMB, TimeoutS: l.TimeoutS, IdleTimeoutS: l.IdleTimeoutS}
}

// Default is the configuration with no file and no flags.
func Default() Config {
	return Config{
		Socket:             "/run/sandboxd/sandboxd.sock",
		SocketGroup:        "sandboxd",
		DataDir:            "/var/lib/sandboxd",
		RunDir:             "/run/sandboxd",
		LogLevel:           "info",
		DiskQuota:          volume.Loop,
		DataDirMinFreeMB:   1024,
		DiskOvercommit:     1,
		DiskSharePerUID:    0.5,
		SandboxUID:         2000000,
		SandboxGID:         2000000,
		MaxSessions:        200,
		MaxSessionsPerUID:  50,
		MaxConcurrentExecs: 64,
		MaxUploadBytes:     100 << 20,
		MaxOutputBytes:     1 << 20,
		MaxAnswerBytes:     4 << 20,
		MaxRequestBytes:    16 << 20,
		HistoryLimit:       100,
		HistoryRecordBytes: 256 << 10,
		HistoryTotalLimit:  100000,
		InterruptGraceS:    2,
		ShutdownGraceS:     30,
		IdleAction:         IdleStop,
		PoolSize:           2,
		PoolMaxSize:        8,
		PoolMaxTotal:       32,
		MaxTemplateMB:      8192,
		// Where Debian's and Ubuntu's lxcfs.service mounts it.
		LXCFSDir:       "/var/lib/lxcfs",
		DefaultRuntime: api.RuntimeRunc,
		Runsc:          Runsc{Platform: "ptrace", Flags: []string{}},
		Defaults:       Limits{MemoryMB: 512, CPUs: 1, Pids: 256, DiskMB: 1024, TimeoutS: 30, IdleTimeoutS: 3600},
		Seccomp:        seccomp.Config{LogDenied: true},
		// Inside the range systemd leaves to containers (524288-1879048191).
		UserNS: UserNS{Enabled: true, IDBase: 1 << 30, Blocks: 4096, LeaseDir: "/run/sandboxd-ids"},
		Network: Network{Enabled: true, Subnet: "10.87.0.0/16", DNSServers: []string{}, LeaseDir: "/run/sandboxd-subnets", MaxConnections: 1024,
			DNSQueriesPerS: 100, DNSBurst: 200, OpenHostNetworks: []string{},
			PackageIndexURL: "https://pypi.org/simple", PackageHosts: []string{"files.pythonhosted.org"}, PackageTimeoutS: 600},
		Max:  Limits{MemoryMB: 16384, CPUs: float64(runtime.NumCPU()), Pids: 4096, DiskMB: 65536, TimeoutS: 3600, IdleTimeoutS: 7 * 86400},
		Node: Node{Labels: map[string]string{}},
	}
}

// PoolShare is how many warm sandboxes the pools of one non-root user's
// templates may keep together: pool_share_per_uid, or when it is 0 half
// of pool_max_total, rounded up (so at least 1 when there are pools).
func (c *Config) PoolShare() int {
	if c.PoolSharePerUID > 0 {
		return c.PoolSharePerUID
	}
	return (c.PoolMaxTotal + 1) / 2
}

// DiskShare is the fraction of the data dir's promisable disk one
// non-root user's sessions may hold: disk_share_per_uid, or when it is 0
// half.
func (c *Config) DiskShare() float64 {
	if c.DiskSharePerUID > 0 {
		return c.DiskSharePerUID
	}
	return 0.5
}
