package api

// Health is the answer of GET /v1/health: 200 with Status HealthOK, or
// HealthDegraded when the host is short of disk space (the daemon serves
// its sessions, but refuses new disks); 503 with HealthUnhealthy when
// another check fails.
type Health struct {
	Status string `json:"status"`
	// Reasons are the checks that failed, a sentence each ("name: why").
	Reasons []string `json:"reasons,omitempty"`
	// Checks are every check by name (Check*).
	Checks map[string]HealthCheck `json:"checks,omitempty"`
	// DataDir is the data dir's free space against its floor; absent from
	// daemons before it.
	DataDir *DataDirHealth `json:"data_dir,omitempty"`
	// Error, on an unhealthy answer (503), says the reasons in the error
	// body of the contract, for clients that read only that.
	Error *ErrorDetail `json:"error,omitempty"`
}

// HealthCheck is one check of GET /v1/health.
type HealthCheck struct {
	OK     bool   `json:"ok"`
	Detail string `json:"detail,omitempty"`
}

// Health statuses. Degraded (200): only disk space is short, the data dir
// below its floor or warm pools waiting for space. Unhealthy answers 503.
const (
	HealthOK        = "ok"
	HealthDegraded  = "degraded"
	HealthUnhealthy = "unhealthy"
)

// Health checks.
const (
	// CheckDatabase: the database takes a write.
	CheckDatabase = "database"
	// CheckCgroups: a sandbox's cgroup can be made.
	CheckCgroups = "cgroups"
	// CheckPools: every warm pool's last start of a sandbox worked.
	CheckPools = "pools"
	// CheckDataDir: the data dir has space above data_dir_min_free_mb.
	CheckDataDir = "data_dir"
)

// DataDirHealth is the space left where session disks live: below
// MinFreeMB (data_dir_min_free_mb) no new disk is made.
type DataDirHealth struct {
	FreeMB    int64 `json:"free_mb"`
	MinFreeMB int64 `json:"min_free_mb"`
	OK        bool  `json:"ok"`
}
