package api

// Node states: a ready node takes new sessions; a draining one refuses
// creates (503) while its running sessions go on, so that a scheduler can
// empty it before maintenance.
const (
	NodeReady    = "ready"
	NodeDraining = "draining"
)

// DrainRequest is the body of POST /v1/node/drain (root only): true drains
// the node, false takes new sessions again.
type DrainRequest struct {
	Drain *bool `json:"drain"`
}

// Node is the answer of GET /v1/node: this daemon as a scheduler (Nomad,
// Kubernetes, Ray) places work on it — who it is, what it has, what is
// taken, and what it can run. Maps and lists are never null, so that a
// scheduler's decoder needs no special case for an empty node.
type Node struct {
	// NodeID is stable across restarts of this daemon and distinct from
	// every other daemon's, on this host or another; it does not reveal
	// the host's machine id.
	NodeID   string `json:"node_id"`
	Hostname string `json:"hostname"`
	Version  string `json:"version"`
	// State is NodeReady or NodeDraining.
	State string `json:"state"`
	// Labels are the operator's ([node] labels in the config), for a
	// scheduler's constraints: zone, rack, GPU.
	Labels map[string]string `json:"labels"`
	// Capacity is what the daemon may hand out to sessions; Allocated is
	// what running sessions hold of it, by their limits.
	Capacity         NodeResources `json:"capacity"`
	Allocated        NodeResources `json:"allocated"`
	SessionsByStatus NodeSessions  `json:"sessions_by_status"`
	// Pools are the warm pools, by template (its Template.Ref).
	Pools map[string]NodePool `json:"pools"`
	// Templates are the templates sessions can be created from, sorted:
	// each its Template.Ref (a user's but root's as "uid/name").
	Templates []string `json:"templates"`
	// Runtimes are the names of the runtimes sessions can ask for here
	// (RuntimeRunc, RuntimeRunsc): usable on this host and allowed by
	// strict_runtime. GET /v1/info says why another is not.
	Runtimes []string `json:"runtimes"`
	// Volumes are the volumes the caller may see, and their sizes: disk
	// the data dir holds for them whatever runs.
	Volumes NodeVolumes `json:"volumes"`
}

// NodeVolumes counts volumes and their sizes.
type NodeVolumes struct {
	Count  int   `json:"count"`
	SizeMB int64 `json:"size_mb"`
}

// NodeResources are memory, CPUs and running sessions, as capacity or as
// allocated.
type NodeResources struct {
	MemoryMB int64   `json:"memory_mb"`
	CPUs     float64 `json:"cpus"`
	Sessions int     `json:"sessions"`
}

// NodeSessions counts sessions by status.
type NodeSessions struct {
	Running int `json:"running"`
	Paused  int `json:"paused"`
	// Hibernated sessions hold no memory: they are not allocated.
	Hibernated int `json:"hibernated"`
	Stopped    int `json:"stopped"`
	Failed     int `json:"failed"`
}

// NodePool is one template's warm pool: sandboxes ready to be claimed,
// and how many it keeps.
type NodePool struct {
	Ready  int `json:"ready"`
	Target int `json:"target"`
}
