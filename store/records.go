package store

import "time"

// The records the store keeps. They are the store's own, not the API's
// wire types (package api): renaming an API field never changes the
// database, and a change of a record is a schema version with its
// migration. Their JSON is what schema 2 (sandboxd before 0.2) wrote, so
// that version's databases read as they are; testdata/record-*.json pins
// it.

// Record is a session: what the API shows of it and what the daemon needs
// to bring it back.
type Record struct {
	ID string `json:"id"`
	// Name is the owner's name for it ("": none), unique among the
	// owner's sessions.
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
	Allow      []string  `json:"allow,omitempty"`
	// EgressKbps and MaxConnections cap its network (0: none).
	EgressKbps     int               `json:"egress_kbps,omitempty"`
	MaxConnections int               `json:"max_connections,omitempty"`
	Labels         map[string]string `json:"labels,omitempty"`
	Env            []string          `json:"env,omitempty"`
	// NetSlot is the session's place in the daemon's subnet, plus one
	// (0: none yet), kept while the session lives so that a restored
	// sandbox keeps its addresses.
	NetSlot uint32 `json:"net_slot,omitempty"`
	// IDBase is the session's block of host ids for its user namespace
	// (0: none yet).
	IDBase uint32 `json:"id_base,omitempty"`
	// Runtime runs its sandbox ("": runc, as before runtimes could be
	// chosen).
	Runtime string `json:"runtime,omitempty"`
	// MCPServers are the host's MCP servers the session may call.
	MCPServers []string `json:"mcp_servers,omitempty"`
	// Idempotency is the create's Idempotency-Key, kept with the session
	// so that a repeat after a daemon restart finds it too.
	Idempotency *Idempotency `json:"idempotency,omitempty"`
	// IdleAction is what its idle timeout does: "stop" or "pause" (""
	// the daemon's idle_action).
	IdleAction string `json:"idle_action,omitempty"`
	// PausedAt is when it was paused (zero unless paused); PausedS the
	// seconds it spent paused before, which its lifetime does not count.
	PausedAt time.Time `json:"paused_at,omitzero"`
	PausedS  float64   `json:"paused_s,omitempty"`
	// Deadline is when the session ends whatever its activity (zero:
	// none). It came after schema 2 without a version of its own, as
	// PausedAt did: an older record lacks it and has none.
	Deadline time.Time `json:"deadline,omitzero"`
	// Contexts are the interpreters made beside the first (the default
	// one is not listed), kept so that a restarted daemon knows them and
	// a new sandbox starts each again when it is first used.
	Contexts []Context `json:"contexts,omitempty"`
	// Volumes are the volumes the session mounts, at every start.
	Volumes []VolumeMount `json:"volumes,omitempty"`
	// Checkpoints is how many executions undo can go back (0: none).
	Checkpoints int `json:"checkpoints,omitempty"`
}

// VolumeMount is a volume a session mounts: its owner's name for it, the
// folder of its id, and where the sandbox sees it.
type VolumeMount struct {
	Name     string `json:"name"`
	OwnerUID uint32 `json:"owner_uid"`
	VolumeID string `json:"volume_id"`
	Path     string `json:"path"`
	ReadOnly bool   `json:"read_only,omitempty"`
}

// Context is one of a session's code contexts.
type Context struct {
	ID        string    `json:"id"`
	Language  string    `json:"language"`
	Cwd       string    `json:"cwd"`
	CreatedAt time.Time `json:"created_at"`
}

// Limits are a session's resources.
type Limits struct {
	MemoryMB     int64   `json:"memory_mb"`
	CPUs         float64 `json:"cpus"`
	Pids         int64   `json:"pids"`
	DiskMB       int64   `json:"disk_mb"`
	TimeoutS     int     `json:"timeout_s"`
	IdleTimeoutS int     `json:"idle_timeout_s"`
}

// Idempotency is the key a session was created with, and the hash of the
// request that made it.
type Idempotency struct {
	Key           string `json:"key"`
	RequestSHA256 string `json:"request_sha256"`
}

// Execution is one recorded execution.
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
	Summarized bool       `json:"summarized,omitempty"`
	// Metrics, CodeSHA256 and CallerUID came after schema 2 without a
	// version of their own, as Output.Bundle did: older records lack them.
	Metrics    *ExecMetrics `json:"metrics,omitempty"`
	CodeSHA256 string       `json:"code_sha256,omitempty"`
	CallerUID  *uint32      `json:"caller_uid,omitempty"`
}

// ExecMetrics are what an execution used.
type ExecMetrics struct {
	WallMS          float64 `json:"wall_ms"`
	CPUMS           float64 `json:"cpu_ms"`
	MemoryPeakBytes uint64  `json:"memory_peak_bytes"`
}

// ExecError is an exception an execution raised.
type ExecError struct {
	Name      string `json:"name"`
	Value     string `json:"value"`
	Traceback string `json:"traceback"`
}

// Output is one rich output of an execution. Bundle came after schema 2
// without a version of its own: records without it read as outputs
// without one, and a daemon before it ignores it.
type Output struct {
	MIME   string            `json:"mime"`
	Data   string            `json:"data"`
	Bundle map[string]string `json:"bundle,omitempty"`
}

// Template is a template as it was added.
type Template struct {
	Name        string            `json:"name"`
	Description string            `json:"description,omitempty"`
	Rootfs      string            `json:"rootfs"`
	Env         map[string]string `json:"env,omitempty"`
	Preload     string            `json:"preload,omitempty"`
	Limits      *LimitDefaults    `json:"limits,omitempty"`
	PoolSize    *int              `json:"pool_size,omitempty"`
	Packages    []string          `json:"packages,omitempty"`
	IndexURL    string            `json:"index_url,omitempty"`
	Runtime     string            `json:"runtime,omitempty"`
	// User is api.TemplateUser's name and home (nil: the default).
	User      *TemplateUser `json:"user,omitempty"`
	OwnerUID  uint32        `json:"owner_uid"`
	CreatedAt time.Time     `json:"created_at"`
}

// TemplateUser is a template's user: its name and home.
type TemplateUser struct {
	Name string `json:"name"`
	Home string `json:"home,omitempty"`
}

// LimitDefaults are a template's default limits; nil fields are unset.
type LimitDefaults struct {
	MemoryMB     *int64   `json:"memory_mb,omitempty"`
	CPUs         *float64 `json:"cpus,omitempty"`
	Pids         *int64   `json:"pids,omitempty"`
	DiskMB       *int64   `json:"disk_mb,omitempty"`
	TimeoutS     *int     `json:"timeout_s,omitempty"`
	IdleTimeoutS *int     `json:"idle_timeout_s,omitempty"`
}
