// Package api holds the wire types of the sandboxd HTTP API (see docs/API.md).
//
// It is a leaf package: the daemon and every client import it, so the contract
// lives in exactly one place. It imports nothing of the server.
package api

import "time"

// Version is the API version served under the /v1 prefix.
const Version = "1"

// VersionHeader carries the daemon's version on every answer.
const VersionHeader = "Sandboxd-Version"

// Session statuses.
const (
	StatusRunning = "running"
	StatusStopped = "stopped"
	StatusFailed  = "failed"
)

// Execution statuses. A timeout or a kill is not an HTTP error: it is a 200
// with one of these.
const (
	StatusOK      = "ok"
	StatusError   = "error"
	StatusTimeout = "timeout"
	StatusKilled  = "killed"
	// StatusPaused is a session whose every process is frozen (POST
	// …/pause): memory and interpreter state kept, no CPU.
	StatusPaused = "paused"
	// StatusHibernated is a session whose memory is saved on disk and
	// whose sandbox is gone (POST …/hibernate, runsc): no memory, no
	// CPU; any execution, file call, attach or port request wakes it.
	StatusHibernated = "hibernated"
	// StatusInterrupted is an execution stopped on request while it ran,
	// as its timeout would have stopped it.
	StatusInterrupted = "interrupted"
	// StatusLost is an execution the daemon did not see end: it restarted
	// meanwhile. Its error says how it ended; its output is gone.
	StatusLost = "lost"
)

// Network modes: none (a private namespace with only lo), allowlist (the
// names and CIDRs of Allow), open (the public internet). See
// docs/network.md.
const (
	NetworkNone      = "none"
	NetworkAllowlist = "allowlist"
	NetworkOpen      = "open"
)

// Runtimes run sandboxes: runc (namespaces, cgroups and seccomp on the
// host's kernel, through libcontainer) and runsc (gVisor: a kernel of its
// own between the code and the host's). See docs/runsc.md.
const (
	RuntimeRunc  = "runc"
	RuntimeRunsc = "runsc"
)

// Limits are the resources one session may use.
type Limits struct {
	MemoryMB     int64   `json:"memory_mb"`
	CPUs         float64 `json:"cpus"`
	Pids         int64   `json:"pids"`
	DiskMB       int64   `json:"disk_mb"`
	TimeoutS     int     `json:"timeout_s"`
	IdleTimeoutS int     `json:"idle_timeout_s"`
}

// Session is one sandbox with its persistent interpreter.
type Session struct {
	ID string `json:"id"`
	// Name is the owner's name for the session, usable wherever its id
	// is (as is an unambiguous prefix of the id).
	Name       string    `json:"name,omitempty"`
	OwnerUID   uint32    `json:"owner_uid"`
	Template   string    `json:"template"`
	Status     string    `json:"status"`
	Reason     string    `json:"reason,omitempty"`
	CreatedAt  time.Time `json:"created_at"`
	LastUsedAt time.Time `json:"last_used_at"`
	ExecCount  int64     `json:"exec_count"`
	Limits     Limits    `json:"limits"`
	Network    string    `json:"network"`
	// Allow is what an allowlist (or, for private ranges, an open)
	// session may reach: host, *.domain or CIDR, each optionally :port.
	Allow []string `json:"allow,omitempty"`
	// EgressKbps and MaxConnections cap a networked session's outgoing
	// rate (kilobits a second) and its open connections (0: no cap).
	EgressKbps     int               `json:"egress_kbps,omitempty"`
	MaxConnections int               `json:"max_connections,omitempty"`
	Labels         map[string]string `json:"labels,omitempty"`
	// Runtime runs the session's sandbox: RuntimeRunc or RuntimeRunsc.
	Runtime string `json:"runtime"`
	// MCPServers are the host's MCP servers code in the session may call
	// through the gateway (see MCPGatewayDir).
	MCPServers []string `json:"mcp_servers,omitempty"`
	// IdleAction is what the session's idle timeout does: "stop" or
	// "pause".
	IdleAction string `json:"idle_action,omitempty"`
	// Deadline is when the session ends, whatever its activity (UTC);
	// nil: it has none. See UpdateSessionRequest.
	Deadline *time.Time `json:"deadline,omitempty"`
	// Volumes are the volumes it mounts.
	Volumes []VolumeMount `json:"volumes,omitempty"`
	// Checkpoints is how many executions undo can go back (0: none).
	Checkpoints int `json:"checkpoints,omitempty"`
}

// CreateSessionRequest is the body of POST /v1/sessions. Zero fields take
// the daemon's defaults; pointers tell "absent" from an explicit zero where
// zero would be out of range.
type CreateSessionRequest struct {
	// Name names the session, unique among the caller's (docker's rules:
	// letters, digits, '_', '.', '-'); 409 when taken.
	Name         string   `json:"name,omitempty"`
	Template     string   `json:"template,omitempty"`
	MemoryMB     *int64   `json:"memory_mb,omitempty"`
	CPUs         *float64 `json:"cpus,omitempty"`
	Pids         *int64   `json:"pids,omitempty"`
	DiskMB       *int64   `json:"disk_mb,omitempty"`
	TimeoutS     *int     `json:"timeout_s,omitempty"`
	IdleTimeoutS *int     `json:"idle_timeout_s,omitempty"`
	Network      string   `json:"network,omitempty"`
	Allow        []string `json:"allow,omitempty"`
	// EgressKbps and MaxConnections default to the daemon's [network]
	// egress_kbps and max_connections; 0 is no cap.
	EgressKbps     *int              `json:"egress_kbps,omitempty"`
	MaxConnections *int              `json:"max_connections,omitempty"`
	Env            map[string]string `json:"env,omitempty"`
	Labels         map[string]string `json:"labels,omitempty"`
	// Runtime is RuntimeRunc or RuntimeRunsc; "" takes the template's,
	// else the daemon's default_runtime.
	Runtime string `json:"runtime,omitempty"`
	// MCPServers names servers of the daemon's [mcp.servers] that code in
	// the session may call through the gateway.
	MCPServers []string `json:"mcp_servers,omitempty"`
	// IdleAction is what the idle timeout does: "stop" or "pause" (""
	// the daemon's idle_action).
	IdleAction string `json:"idle_action,omitempty"`
	// DeadlineS ends the session that many seconds from now, whatever
	// its activity (more than 0; absent: no deadline).
	DeadlineS *int `json:"deadline_s,omitempty"`
	// Volumes are the caller's volumes the session mounts (volumes.go).
	Volumes []VolumeMount `json:"volumes,omitempty"`
	// Snapshot makes the session from a snapshot of the caller's
	// (snapshots.go): its files and settings. Only Name, Labels (added
	// to the snapshot's), Env (over the snapshot's), IdleAction,
	// DeadlineS and Volumes may be given beside it.
	Snapshot string `json:"snapshot,omitempty"`
	// Count, with Snapshot, makes that many sessions (1 to MaxCount), and
	// the answer is a SessionList.
	Count int `json:"count,omitempty"`
	// Checkpoints keeps the state before each of the session's last
	// Checkpoints executions (0 to 16; 0: none), for POST …/undo.
	Checkpoints int `json:"checkpoints,omitempty"`
}

// PackagesRequest is the body of POST /v1/sessions/{id}/packages: pip
// requirements ("numpy==1.26.4", "requests>=2,<3", "rich[jupyter]") to
// install into the session's /workspace, from IndexURL or the daemon's
// package index.
type PackagesRequest struct {
	Packages []string `json:"packages"`
	IndexURL string   `json:"index_url,omitempty"`
}

// SessionList is the answer of GET /v1/sessions.
type SessionList struct {
	Sessions []Session `json:"sessions"`
}

// ExecRequest is the body of POST /v1/sessions/{id}/exec.
type ExecRequest struct {
	Language string            `json:"language"`
	Code     string            `json:"code"`
	TimeoutS *float64          `json:"timeout_s,omitempty"`
	Env      map[string]string `json:"env,omitempty"`
	Cwd      string            `json:"cwd,omitempty"`
	// Context names the interpreter (CodeContext) that runs it: "" is
	// ContextDefault.
	Context string `json:"context,omitempty"`
	// Wait false answers 202 with the execution's id at once (ExecStarted);
	// GET …/executions/{eid} tells how it goes. Absent: true.
	Wait *bool `json:"wait,omitempty"`
}

// ExecStarted is the answer (202) of an exec with wait false.
type ExecStarted struct {
	ID string `json:"id"`
}

// ExecMetrics are what one execution used: its wall time, and the CPU
// time and memory peak of the session's cgroup while it ran (the
// interpreter, the processes it started, and whatever else the session
// runs meanwhile).
type ExecMetrics struct {
	WallMS          float64 `json:"wall_ms"`
	CPUMS           float64 `json:"cpu_ms"`
	MemoryPeakBytes uint64  `json:"memory_peak_bytes"`
}

// ExecError is a Python exception raised by the executed code.
type ExecError struct {
	Name      string `json:"name"`
	Value     string `json:"value"`
	Traceback string `json:"traceback"`
}

// Output is one rich output: a matplotlib figure, what display() showed,
// or the last expression's rich representations (docs/API.md).
type Output struct {
	// MIME and Data are the richest representation (PNG first, see
	// docs/API.md), Data base64 whatever the type: what clients read
	// before bundles, and a figure's whole output.
	MIME string `json:"mime"`
	Data string `json:"data"`
	// Bundle is every representation, Jupyter's way: mime -> data, text
	// types as text, binary ones (image/png) base64. Figures have none.
	Bundle map[string]string `json:"bundle,omitempty"`
}

// Execution is the outcome of one piece of code.
type Execution struct {
	ID         string     `json:"id"`
	SessionID  string     `json:"session_id"`
	Language   string     `json:"language"`
	Status     string     `json:"status"`
	Stdout     string     `json:"stdout"`
	Stderr     string     `json:"stderr"`
	ExitCode   int        `json:"exit_code"`
	Result     *string    `json:"result,omitempty"`
	Error      *ExecError `json:"error,omitempty"`
	Outputs    []Output   `json:"outputs,omitempty"`
	StartedAt  time.Time  `json:"started_at"`
	DurationMS float64    `json:"duration_ms"`
	Truncated  bool       `json:"truncated"`
	StateReset bool       `json:"state_reset"`
	// Summarized says the history keeps this execution cut to the daemon's
	// history_record_bytes: what the answer had in full is not all there.
	Summarized bool         `json:"summarized,omitempty"`
	Metrics    *ExecMetrics `json:"metrics,omitempty"`
	// CodeSHA256 is the hex SHA-256 of the code run, and CallerUID the uid
	// that asked for it: who ran what, without keeping the code.
	CodeSHA256 string  `json:"code_sha256,omitempty"`
	CallerUID  *uint32 `json:"caller_uid,omitempty"`
}

// ExecutionSummary is one execution as GET /v1/sessions/{id}/executions
// lists it: how it went, without its output (GET …/executions/{eid} has
// the whole Execution while the history keeps it).
type ExecutionSummary struct {
	ID         string    `json:"id"`
	Language   string    `json:"language"`
	CodeSHA256 string    `json:"code_sha256,omitempty"`
	CallerUID  *uint32   `json:"caller_uid,omitempty"`
	StartedAt  time.Time `json:"started_at"`
	DurationMS float64   `json:"duration_ms"`
	Status     string    `json:"status"`
	// ExitCode is absent while the execution runs.
	ExitCode   *int         `json:"exit_code,omitempty"`
	Metrics    *ExecMetrics `json:"metrics,omitempty"`
	StateReset bool         `json:"state_reset,omitempty"`
	Truncated  bool         `json:"truncated,omitempty"`
}

// Interrupted is the answer of POST /v1/sessions/{id}/interrupt: whether an
// execution was running (it answers status interrupted).
type Interrupted struct {
	Interrupted bool `json:"interrupted"`
}

// ExecutionList is the answer of GET /v1/sessions/{id}/executions.
type ExecutionList struct {
	Executions []ExecutionSummary `json:"executions"`
}

// Stream event types of an NDJSON exec answer.
const (
	EventStdout = "stdout"
	EventStderr = "stderr"
	EventDone   = "done"
	// EventDisplay carries one output (Event.Output) as the code
	// displays it; the Execution's outputs hold it too, in order.
	EventDisplay = "display"
)

// StreamMIME is the Accept value that asks for a streamed execution.
const StreamMIME = "application/x-ndjson"

// Event is one line of a streamed execution.
type Event struct {
	Type      string       `json:"type"`
	Data      string       `json:"data,omitempty"`
	Execution *Execution   `json:"execution,omitempty"`
	Error     *ErrorDetail `json:"error,omitempty"`
	// Output is a display event's.
	Output *Output `json:"output,omitempty"`
}

// FileInfo is one entry of a folder listing.
type FileInfo struct {
	Name       string    `json:"name"`
	Type       string    `json:"type"` // file, dir, symlink, other
	Size       int64     `json:"size"`
	Mode       string    `json:"mode"`
	ModifiedAt time.Time `json:"modified_at"`
	// Path is the entry's whole path in the sandbox, in a listing deeper
	// than one level (depth > 1), where names alone would be ambiguous.
	Path string `json:"path,omitempty"`
	// Permissions is ls's string ("-rw-r--r--"), as FileStat's.
	Permissions string `json:"permissions"`
	// Metadata is the entry's user metadata, as FileStat's.
	Metadata map[string]string `json:"metadata,omitempty"`
}

// FileList is the answer of GET …/files for a folder.
type FileList struct {
	Entries []FileInfo `json:"entries"`
}

// FileWritten is the answer of PUT …/files.
type FileWritten struct {
	Path string `json:"path"`
	Size int64  `json:"size"`
	// Files, for a tar stream unpacked (format=tar), is how many files
	// it wrote.
	Files int `json:"files,omitempty"`
}

// Stats is the answer of GET /v1/sessions/{id}/stats.
type Stats struct {
	Status           string  `json:"status"`
	ExecCount        int64   `json:"exec_count"`
	UptimeS          float64 `json:"uptime_s"`
	CPUSeconds       float64 `json:"cpu_seconds"`
	MemoryBytes      uint64  `json:"memory_bytes"`
	MemoryLimitBytes uint64  `json:"memory_limit_bytes"`
	Pids             uint64  `json:"pids"`
	DiskBytes        int64   `json:"disk_bytes"`
	// DiskLimitBytes is the size of the session's filesystem (0: no quota).
	DiskLimitBytes int64 `json:"disk_limit_bytes,omitempty"`
	// DNSRefused counts the session's DNS queries the daemon's DNS refused
	// (names its policy does not allow, types not forwarded, answers'
	// blocked addresses), DNSRateLimited those of them over its rate
	// ([network] dns_queries_per_s), since the daemon started.
	DNSRefused     uint64 `json:"dns_refused"`
	DNSRateLimited uint64 `json:"dns_rate_limited"`
	// NetworkDeniedPackets counts the packets its network policy refused
	// since its sandbox's network was last set up (its start).
	NetworkDeniedPackets uint64 `json:"network_denied_packets"`
}

// RunFile is a file written into a one-shot sandbox before the code runs.
type RunFile struct {
	Path          string `json:"path"`
	ContentBase64 string `json:"content_base64"`
}

// RunRequest is the body of POST /v1/run: a session request, the code, and
// files to place first.
type RunRequest struct {
	CreateSessionRequest
	Language string    `json:"language"`
	Code     string    `json:"code"`
	Files    []RunFile `json:"files,omitempty"`
}

// Info is the answer of GET /v1/info.
type Info struct {
	Version    string `json:"version"`
	APIVersion string `json:"api_version"`
	// Runtime is the default runtime (RuntimeRunc or RuntimeRunsc);
	// Runtimes are those this host can run, and why the others cannot.
	Runtime       string        `json:"runtime"`
	Runtimes      []RuntimeInfo `json:"runtimes"`
	CgroupVersion int           `json:"cgroup_version"`
	Seccomp       SeccompInfo   `json:"seccomp"`
	Sessions      SessionInfo   `json:"sessions"`
	Pool          PoolInfo      `json:"pool"`
	Defaults      Limits        `json:"defaults"`
	Max           Limits        `json:"max"`
	SandboxUID    int           `json:"sandbox_uid"`
	UserNS        UserNSInfo    `json:"userns"`
	Network       NetworkInfo   `json:"network"`
	// ProcView says which lxcfs shows sessions their own memory, CPUs and
	// uptime in /proc.
	ProcView ProcViewInfo `json:"proc_view"`
	// MCPServers are the MCP servers sessions may be granted
	// (mcp_servers), each with the tools it allows.
	MCPServers []MCPServerInfo `json:"mcp_servers"`
	// DataDir and RunDir are the daemon's folders, for sandboxctl doctor's
	// checks of the daemon it talks to; absent from daemons before them.
	DataDir string `json:"data_dir,omitempty"`
	RunDir  string `json:"run_dir,omitempty"`
	// Supervisor is the native supervisor new sandboxes start with as
	// their PID 1 (sandboxd-supervisor, its path on the host); empty: the
	// Python one (none was found beside the daemon, or daemons before it).
	Supervisor string `json:"supervisor,omitempty"`
}

// RuntimeInfo is one runtime of the host.
type RuntimeInfo struct {
	Name string `json:"name"`
	// Usable says sessions can use it; Problem says why not, and what to
	// install.
	Usable  bool   `json:"usable"`
	Problem string `json:"problem,omitempty"`
	// Version is the runtime's own (runsc's build date, runc's
	// libcontainer version); Platform is runsc's (ptrace, systrap, kvm).
	Version  string `json:"version,omitempty"`
	Platform string `json:"platform,omitempty"`
	// Networks says whether its sessions can have a network ("none"
	// aside): runsc builds before 2023 cannot on kernels from 6.0.
	Networks bool `json:"networks"`
}

// ProcViewInfo says what serves sessions their own /proc/meminfo,
// cpuinfo, stat and uptime: ServedBy is ProcViewSystem (the host's lxcfs
// service), ProcViewDaemon (an lxcfs the daemon runs, where lxcfs is
// installed and nothing serves it) or ProcViewNone (sessions see the
// host's files, for the reason Problem says).
type ProcViewInfo struct {
	ServedBy string `json:"served_by"`
	Problem  string `json:"problem,omitempty"`
}

// What serves sessions their /proc view (ProcViewInfo.ServedBy).
const (
	ProcViewSystem = "system"
	ProcViewDaemon = "daemon"
	ProcViewNone   = "none"
)

// NetworkInfo says whether sessions can have a network, and where.
type NetworkInfo struct {
	// Modes are the network policies sessions can have ("none" always).
	Modes []string `json:"modes"`
	// Problem says why only "none" is offered, if so.
	Problem string `json:"problem,omitempty"`
	Subnet  string `json:"subnet,omitempty"`
	Subnet6 string `json:"subnet6,omitempty"`
	// Table is the daemon's nftables table (inet family).
	Table string `json:"table,omitempty"`
}

// UserNSInfo describes the user namespaces of sandboxes: whether they have
// them, and the host ids the daemon gives out, a block per session.
type UserNSInfo struct {
	Enabled   bool   `json:"enabled"`
	IDBase    uint32 `json:"id_base,omitempty"`
	BlockSize int    `json:"block_size,omitempty"`
	Blocks    int    `json:"blocks,omitempty"`
	InUse     int    `json:"in_use,omitempty"`
}

// SeccompInfo says whether and how seccomp filters sandboxes.
type SeccompInfo struct {
	Enabled        bool   `json:"enabled"`
	LibraryVersion string `json:"library_version,omitempty"`
	Syscalls       int    `json:"allowed_syscalls"`
	// LogDenied is true when refused calls reach the daemon's log.
	LogDenied bool `json:"log_denied"`
}

// SessionInfo counts sessions by status.
type SessionInfo struct {
	Total   int `json:"total"`
	Running int `json:"running"`
	Paused  int `json:"paused"`
	// Hibernated sessions hold no sandbox: their memory is on disk.
	Hibernated int `json:"hibernated"`
	Stopped    int `json:"stopped"`
	Failed     int `json:"failed"`
}

// PoolInfo describes the warm pools: Size and Idle are their totals,
// Templates each template's own.
type PoolInfo struct {
	Size int `json:"size"`
	Idle int `json:"idle"`
	// Target is how many they keep now: Size, or more after a burst of
	// demand (pool_max_size).
	Target    int                 `json:"target"`
	Templates map[string]PoolFill `json:"templates,omitempty"`
}

// PoolFill is one template's warm pool: how many sandboxes it keeps
// started at least (its pool_size), how many it keeps now (Target: more
// after a burst of demand, up to pool_max_size), and how many are ready.
type PoolFill struct {
	Size   int `json:"size"`
	Target int `json:"target"`
	Idle   int `json:"idle"`
}

// RootfsHost is the root filesystem of the host's system folders,
// read-only: the python template's.
const RootfsHost = "host"

// LimitDefaults are a template's default limits for its sessions. Absent
// fields take the daemon's defaults; a session's request overrides them.
// In answers every field is set to the value sessions get.
type LimitDefaults struct {
	MemoryMB     *int64   `json:"memory_mb,omitempty"`
	CPUs         *float64 `json:"cpus,omitempty"`
	Pids         *int64   `json:"pids,omitempty"`
	DiskMB       *int64   `json:"disk_mb,omitempty"`
	TimeoutS     *int     `json:"timeout_s,omitempty"`
	IdleTimeoutS *int     `json:"idle_timeout_s,omitempty"`
}

// Template is what sessions start from: a root filesystem, environment,
// Python run when the interpreter starts, default limits, and a warm pool.
//
// A template is its owner's: names are unique per owner, not per host.
// Ref names it without doubt (see TemplateRef); a bare name a caller gives
// is the caller's own template of that name, else root's (root's and the
// built-in one are everyone's).
type Template struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	// Rootfs is RootfsHost or an absolute path to a directory the daemon
	// owns (an imported root filesystem, or one root set up).
	Rootfs   string            `json:"rootfs"`
	Env      map[string]string `json:"env,omitempty"`
	Preload  string            `json:"preload,omitempty"`
	Limits   *LimitDefaults    `json:"limits,omitempty"`
	PoolSize *int              `json:"pool_size,omitempty"`
	// Packages are pip requirements installed when the template is added,
	// from IndexURL or the daemon's package index; its sessions see them
	// read-only (at /packages) and import them with no network.
	Packages []string `json:"packages,omitempty"`
	IndexURL string   `json:"index_url,omitempty"`
	// Runtime runs its sessions unless they name one (RuntimeRunc or
	// RuntimeRunsc; "": the daemon's default_runtime).
	Runtime string `json:"runtime,omitempty"`
	// User is who its sessions' code is by name, and its home (nil:
	// "sandbox" at /workspace; see TemplateUser).
	User *TemplateUser `json:"user,omitempty"`

	// Set by the daemon.
	// Ref is TemplateRef(OwnerUID, Name): what sessions of it record, and
	// what names it to anyone allowed to use it.
	Ref       string    `json:"ref"`
	Builtin   bool      `json:"builtin,omitempty"`
	OwnerUID  uint32    `json:"owner_uid"`
	CreatedAt time.Time `json:"created_at"`
	PoolIdle  int       `json:"pool_idle"`
	// Error says why the last sandbox of this template failed to start,
	// while its pool cannot fill.
	Error string `json:"error,omitempty"`
}

// TemplateList is the answer of GET /v1/templates.
type TemplateList struct {
	Templates []Template `json:"templates"`
}

// RootfsImported is the answer of PUT /v1/templates/{name}/rootfs: where
// the tarball was unpacked, and what it held.
type RootfsImported struct {
	Name   string `json:"name"`
	Rootfs string `json:"rootfs"`
	Files  int    `json:"files"`
	Bytes  int64  `json:"bytes"`
	// Skipped counts entries left out: device nodes, fifos, sockets.
	Skipped int `json:"skipped"`
}
