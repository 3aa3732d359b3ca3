package daemon

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"

	"github.com/BurntSushi/toml"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/daemon/mcpgateway"
	"github.com/sandboxd/sandboxd/isolation"
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
	// (within pool_max_total) for poolDemandMemory (0, or below
	// pool_size: the pool stays at pool_size).
	PoolMaxSize int `toml:"pool_max_size"`
	// PoolMaxTotal bounds the sandboxes all warm pools together keep
	// (the python template's pool_size and every added template's).
	PoolMaxTotal int `toml:"pool_max_total"`
	// PoolSharePerUID bounds the sandboxes the pools of one user's
	// templates keep together, so that one user cannot take every slot of
	// pool_max_total (0: half of it, rounded up; see poolShare). Root's
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
	// processes end, the workspace stays) or "pause" (frozen, state kept).
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
	// there but is installed, the daemon runs its own (procview.go), else
	// sandboxes show the host's files, with one warning at start.
	LXCFSDir string `toml:"lxcfs_dir"`
	// DefaultRuntime runs sessions that name no runtime (nor their
	// template): "runc" or "runsc". StrictRuntime makes it the only one:
	// the daemon refuses to start when it is unusable, and refuses
	// sessions and templates that ask for another.
	DefaultRuntime string      `toml:"default_runtime"`
	StrictRuntime  bool        `toml:"strict_runtime"`
	Runsc          RunscConfig `toml:"runsc"`

	Defaults LimitsConfig   `toml:"defaults"`
	Max      LimitsConfig   `toml:"max"`
	Seccomp  seccomp.Config `toml:"seccomp"`
	UserNS   UserNSConfig   `toml:"userns"`
	Network  NetworkConfig  `toml:"network"`
	Node     NodeConfig     `toml:"node"`
	// MCP is the host's MCP servers that sessions may be granted (see
	// package mcpgateway).
	MCP mcpgateway.Config `toml:"mcp"`
}

// NodeConfig is what GET /v1/node tells schedulers of this daemon beyond
// what it measures.
type NodeConfig struct {
	// Labels are the operator's, for schedulers' constraints ({zone =
	// "a", gpu = "none"}); the same rules as session labels.
	Labels map[string]string `toml:"labels"`
}

// runscOptions is how the runtime runs runsc.
func (c *Config) runscOptions() isolation.RunscOptions {
	return isolation.RunscOptions{Path: c.Runsc.Path, Platform: c.Runsc.Platform, Flags: c.Runsc.Flags}
}

// RunscConfig is gVisor's runsc, the second runtime (docs/runsc.md).
type RunscConfig struct {
	// Path is the runsc binary ("": runsc on PATH).
	Path string `toml:"path"`
	// Platform is gVisor's: "ptrace" (works anywhere), "systrap" (newer
	// builds) or "kvm" (needs hardware virtualization).
	Platform string `toml:"platform"`
	// Flags are more global flags for every runsc call.
	Flags []string `toml:"flags"`
}

// NetworkConfig is the network of sessions whose policy is not "none"
// (see docs/network.md).
type NetworkConfig struct {
	// Enabled allows network policies other than "none".
	Enabled bool `toml:"enabled"`
	// Subnet is the /16 of IPv4 sandbox addresses come from (a /30 each).
	// Several daemons on a host each lease their own in LeaseDir: one whose
	// config does not set it takes the next free /16 after the default.
	Subnet string `toml:"subnet"`
	// Subnet6, if set, is the /96 of IPv6 sandboxes get addresses from;
	// "" gives sandboxes no IPv6 at all (turning on IPv6 forwarding makes
	// a host ignore router advertisements, so it is the operator's call).
	Subnet6 string `toml:"subnet6"`
	// DNSServers are the resolvers the daemon's DNS asks for sandboxes
	// ("ADDR" or "ADDR:PORT"); empty: the host's /etc/resolv.conf.
	DNSServers []string `toml:"dns_servers"`
	// DNSPort is where the daemon's DNS listens on the host (0: a free
	// port); sandboxes' DNS to any address is sent there.
	DNSPort  int    `toml:"dns_port"`
	LeaseDir string `toml:"lease_dir"`
	// DNSQueriesPerS is how many DNS queries a second one session may
	// ask the daemon's DNS on average, DNSBurst how many at once; past
	// them its queries are answered REFUSED, and counted in its stats
	// (dns_rate_limited). 0: no limit.
	DNSQueriesPerS float64 `toml:"dns_queries_per_s"`
	DNSBurst       int     `toml:"dns_burst"`
	// OpenHostNetworks are networks the host is directly connected to
	// that policy open may reach all the same (CIDRs); by default open
	// reaches none of the host's networks, its own addresses nor its
	// gateways (docs/network.md).
	OpenHostNetworks []string `toml:"open_host_networks"`
	// PackageIndexURL is where POST …/packages installs from when the
	// request names no index; PackageHosts are the other hosts its
	// downloads come from (PyPI serves files from another name), opened
	// with it for the length of an install. PackageTimeoutS bounds one.
	PackageIndexURL string   `toml:"package_index_url"`
	PackageHosts    []string `toml:"package_hosts"`
	PackageTimeoutS int      `toml:"package_timeout_s"`
	// EgressKbps and MaxConnections are the caps of a networked session
	// that does not ask for its own (0: none).
	EgressKbps     int `toml:"egress_kbps"`
	MaxConnections int `toml:"max_connections"`
	// explicit says the config file set subnet.
	explicit bool
}

// UserNSConfig is the user namespace every sandbox gets: a block of
// idmap.BlockSize host ids per session, from the range Blocks blocks long
// that starts at IDBase.
type UserNSConfig struct {
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

func (u UserNSConfig) idRange() idmap.Range { return idmap.Range{Base: u.IDBase, Blocks: u.Blocks} }

// LimitsConfig is a set of session limits in the config file.
type LimitsConfig struct {
	MemoryMB     int64   `toml:"memory_mb"`
	CPUs         float64 `toml:"cpus"`
	Pids         int64   `toml:"pids"`
	DiskMB       int64   `toml:"disk_mb"`
	TimeoutS     int     `toml:"timeout_s"`
	IdleTimeoutS int     `toml:"idle_timeout_s"`
}

func (l LimitsConfig) api() api.Limits {
	return api.Limits{MemoryMB: l.MemoryMB, CPUs: l.CPUs, Pids: l.Pids, DiskMB: l.DiskMB, TimeoutS: l.TimeoutS, IdleTimeoutS: l.IdleTimeoutS}
}

// DefaultConfig is the configuration with no file and no flags.
func DefaultConfig() Config {
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
		Runsc:          RunscConfig{Platform: "ptrace", Flags: []string{}},
		Defaults:       LimitsConfig{MemoryMB: 512, CPUs: 1, Pids: 256, DiskMB: 1024, TimeoutS: 30, IdleTimeoutS: 3600},
		Seccomp:        seccomp.Config{LogDenied: true},
		// Inside the range systemd leaves to containers (524288-1879048191).
		UserNS: UserNSConfig{Enabled: true, IDBase: 1 << 30, Blocks: 4096, LeaseDir: "/run/sandboxd-ids"},
		Network: NetworkConfig{Enabled: true, Subnet: "10.87.0.0/16", DNSServers: []string{}, LeaseDir: "/run/sandboxd-subnets", MaxConnections: 1024,
			DNSQueriesPerS: 100, DNSBurst: 200, OpenHostNetworks: []string{},
			PackageIndexURL: "https://pypi.org/simple", PackageHosts: []string{"files.pythonhosted.org"}, PackageTimeoutS: 600},
		Max:  LimitsConfig{MemoryMB: 16384, CPUs: float64(runtime.NumCPU()), Pids: 4096, DiskMB: 65536, TimeoutS: 3600, IdleTimeoutS: 7 * 86400},
		Node: NodeConfig{Labels: map[string]string{}},
	}
}

// poolShare is how many warm sandboxes the pools of one non-root user's
// templates may keep together: pool_share_per_uid, or when it is 0 half
// of pool_max_total, rounded up (so at least 1 when there are pools).
func (c *Config) poolShare() int {
	if c.PoolSharePerUID > 0 {
		return c.PoolSharePerUID
	}
	return (c.PoolMaxTotal + 1) / 2
}

// diskShare is the fraction of the data dir's promisable disk one
// non-root user's sessions may hold: disk_share_per_uid, or when it is 0
// half.
func (c *Config) diskShare() float64 {
	if c.DiskSharePerUID > 0 {
		return c.DiskSharePerUID
	}
	return 0.5
}

// LoadConfig reads a TOML file over the defaults. Unknown keys are errors,
// with the line they are on, so a typo never passes silently.
func LoadConfig(path string) (Config, error) {
	c := DefaultConfig()
	if path == "" {
		return c, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return c, err
	}
	md, err := toml.Decode(string(data), &c)
	if err != nil {
		var perr toml.ParseError
		if errors.As(err, &perr) {
			return c, fmt.Errorf("%s:%d: %s", path, perr.Position.Line, perr.Message)
		}
		// A value of the wrong type: `toml: line 3 (last key "k"): …`.
		if m := typeError.FindStringSubmatch(err.Error()); m != nil {
			return c, fmt.Errorf("%s:%s: %s: %s", path, m[1], m[2], m[3])
		}
		return c, fmt.Errorf("%s: %w", path, err)
	}
	c.UserNS.explicit = md.IsDefined("userns", "id_base")
	c.Network.explicit = md.IsDefined("network", "subnet")
	lines := keyLines(data)
	if und := md.Undecoded(); len(und) > 0 {
		return c, fmt.Errorf("%s:%d: unknown key %q", path, lines[und[0].String()], und[0].String())
	}
	if err := c.Validate(); err != nil {
		return c, placeErrors(path, lines, err)
	}
	return c, nil
}

var typeError = regexp.MustCompile(`^toml: line (\d+) \(last key "([^"]*)"\): (.*)$`)

// placeErrors puts the file and line of the key each problem names first
// ("max_sessions must be above 0" → "FILE:12: max_sessions must ...");
// a problem with a value the file does not set names the file alone.
func placeErrors(path string, lines map[string]int, err error) error {
	var errs []error
	for _, e := range unjoin(err) {
		key, _, _ := strings.Cut(e.Error(), " ")
		key = strings.TrimSuffix(key, ":")
		if n, ok := lines[key]; ok {
			errs = append(errs, fmt.Errorf("%s:%d: %w", path, n, e))
		} else {
			errs = append(errs, fmt.Errorf("%s: %w", path, e))
		}
	}
	return errors.Join(errs...)
}

func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// keyLines maps each key the TOML text sets ("max_sessions",
// "defaults.memory_mb") and each table ("userns") to its line, for error
// messages. The config's plain shape (tables of bare keys) is all it reads.
func keyLines(data []byte) map[string]int {
	out := map[string]int{}
	table := ""
	for i, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(line, "["):
			table = strings.Trim(strings.TrimSpace(strings.SplitN(line, "#", 2)[0]), "[] ")
			out[table] = i + 1
		case strings.Contains(line, "=") && !strings.HasPrefix(line, "#"):
			k := strings.Trim(strings.TrimSpace(strings.SplitN(line, "=", 2)[0]), `"'`)
			if table != "" {
				k = table + "." + k
			}
			if _, seen := out[k]; !seen {
				out[k] = i + 1
			}
		}
	}
	return out
}

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
	check(c.IdleAction == IdleStop || c.IdleAction == IdlePause, "idle_action must be %q or %q", IdleStop, IdlePause)
	d, m := c.Defaults, c.Max
	check(d.MemoryMB >= minMemoryMB && d.MemoryMB <= m.MemoryMB, "defaults.memory_mb must be between %d and max.memory_mb", minMemoryMB)
	check(d.CPUs > 0 && d.CPUs <= m.CPUs, "defaults.cpus must be above 0 and at most max.cpus")
	check(d.Pids >= minPids && d.Pids <= m.Pids, "defaults.pids must be between %d and max.pids", minPids)
	check(d.DiskMB >= minDiskMB && d.DiskMB <= m.DiskMB, "defaults.disk_mb must be between %d and max.disk_mb", minDiskMB)
	check(d.TimeoutS > 0 && d.TimeoutS <= m.TimeoutS, "defaults.timeout_s must be above 0 and at most max.timeout_s")
	check(d.IdleTimeoutS >= 0 && d.IdleTimeoutS <= m.IdleTimeoutS, "defaults.idle_timeout_s must be between 0 and max.idle_timeout_s")
	if c.UserNS.Enabled {
		r := c.UserNS.idRange()
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
	if err := checkLabels(c.Node.Labels); err != nil {
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
