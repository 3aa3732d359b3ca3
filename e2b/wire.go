package e2b

import "time"

// The control plane's bodies, with E2B's names (its OpenAPI schema, as
// the SDKs' generated types carry it).

// newSandbox is the body of POST /sandboxes and /v2/sandboxes.
type newSandbox struct {
	TemplateID string `json:"templateID"`
	// Timeout is the sandbox's lifetime in seconds from now (E2B's
	// default: 15 s for the API, the SDKs send 300).
	Timeout             *int              `json:"timeout,omitempty"`
	Metadata            map[string]string `json:"metadata,omitempty"`
	EnvVars             map[string]string `json:"envVars,omitempty"`
	AllowInternetAccess *bool             `json:"allow_internet_access,omitempty"`
	AutoPause           *bool             `json:"autoPause,omitempty"`
	Secure              *bool             `json:"secure,omitempty"`
	// What sandboxd does not have: refused with a sentence when given.
	MCP          map[string]any `json:"mcp,omitempty"`
	VolumeMounts []any          `json:"volumeMounts,omitempty"`
	Network      *networkConfig `json:"network,omitempty"`
	AutoResume   *struct {
		Enabled bool `json:"enabled"`
	} `json:"autoResume,omitempty"`
	AutoPauseMemory *bool `json:"autoPauseMemory,omitempty"`
	IAM             any   `json:"iam,omitempty"`
}

// networkConfig is E2B's network section; sandboxd takes allowOut as its
// allowlist.
type networkConfig struct {
	AllowOut           []string `json:"allowOut,omitempty"`
	DenyOut            []string `json:"denyOut,omitempty"`
	AllowPublicTraffic *bool    `json:"allowPublicTraffic,omitempty"`
	Rules              any      `json:"rules,omitempty"`
	EgressProxy        any      `json:"egressProxy,omitempty"`
	MaskRequestHost    string   `json:"maskRequestHost,omitempty"`
	HTTPSPorts         []int    `json:"httpsPorts,omitempty"`
}

// sandbox is what a create, connect or resume answers.
type sandbox struct {
	SandboxID          string  `json:"sandboxID"`
	TemplateID         string  `json:"templateID"`
	ClientID           string  `json:"clientID"`
	EnvdVersion        string  `json:"envdVersion"`
	EnvdAccessToken    string  `json:"envdAccessToken,omitempty"`
	TrafficAccessToken *string `json:"trafficAccessToken"`
	Domain             *string `json:"domain"`
	Alias              string  `json:"alias,omitempty"`
}

// listedSandbox is one sandbox of a list.
type listedSandbox struct {
	SandboxID   string            `json:"sandboxID"`
	TemplateID  string            `json:"templateID"`
	Alias       string            `json:"alias,omitempty"`
	ClientID    string            `json:"clientID"`
	StartedAt   time.Time         `json:"startedAt"`
	EndAt       time.Time         `json:"endAt"`
	CPUCount    int               `json:"cpuCount"`
	MemoryMB    int64             `json:"memoryMB"`
	DiskSizeMB  int64             `json:"diskSizeMB"`
	Metadata    map[string]string `json:"metadata,omitempty"`
	State       string            `json:"state"`
	EnvdVersion string            `json:"envdVersion"`
	// VolumeMounts is always empty: sandboxd has no volumes yet.
	VolumeMounts []any `json:"volumeMounts"`
}

// sandboxDetail is GET /sandboxes/{id}.
type sandboxDetail struct {
	listedSandbox
	EnvdAccessToken     string     `json:"envdAccessToken,omitempty"`
	AllowInternetAccess *bool      `json:"allowInternetAccess"`
	Domain              *string    `json:"domain"`
	Lifecycle           lifecycle  `json:"lifecycle"`
	Network             *netDetail `json:"network,omitempty"`
}

type lifecycle struct {
	AutoResume bool   `json:"autoResume"`
	OnTimeout  string `json:"onTimeout"`
}

type netDetail struct {
	AllowOut []string `json:"allowOut,omitempty"`
}

// connectSandbox is the body of POST /sandboxes/{id}/connect (and v2):
// the timeout, in seconds, from now.
type connectSandbox struct {
	Timeout *int  `json:"timeout,omitempty"`
	Memory  *bool `json:"memory,omitempty"`
}

// resumedSandbox is the body of the deprecated POST /sandboxes/{id}/resume.
type resumedSandbox struct {
	Timeout   *int  `json:"timeout,omitempty"`
	AutoPause *bool `json:"autoPause,omitempty"`
	Memory    *bool `json:"memory,omitempty"`
}

// timeoutRequest is the body of POST /sandboxes/{id}/timeout.
type timeoutRequest struct {
	Timeout *int `json:"timeout"`
}

// refreshRequest is the body of POST /sandboxes/{id}/refreshes.
type refreshRequest struct {
	Duration *int `json:"duration,omitempty"`
}

// pauseRequest is the body of POST /sandboxes/{id}/pause.
type pauseRequest struct {
	Memory *bool `json:"memory,omitempty"`
}

// sandboxMetric is one sample of GET /sandboxes/{id}/metrics.
type sandboxMetric struct {
	Timestamp     time.Time `json:"timestamp"`
	TimestampUnix int64     `json:"timestampUnix"`
	CPUCount      int       `json:"cpuCount"`
	CPUUsedPct    float64   `json:"cpuUsedPct"`
	MemUsed       uint64    `json:"memUsed"`
	MemTotal      uint64    `json:"memTotal"`
	MemCache      uint64    `json:"memCache"`
	DiskUsed      int64     `json:"diskUsed"`
	DiskTotal     int64     `json:"diskTotal"`
}

// apiError is E2B's error body.
type apiError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}
