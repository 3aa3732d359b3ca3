// Package node is the daemon as a scheduler sees it: its id (nodeid.go),
// what the host offers and what is allocated (GET /v1/node), whether it
// takes new sessions (drain.go) and whether it can do its work
// (/v1/health). It serves those three calls of the API's system area by
// itself; what it reads of the daemon (sessions, pools, runtimes, the
// database, the data dir's space, who may do what) comes in through a
// Source, never *Daemon.
package node

import (
	"context"
	"log/slog"
	"maps"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/daemon/config"
	sess "github.com/sandboxd/sandboxd/daemon/session"
	"github.com/sandboxd/sandboxd/internal/version"
	"github.com/sandboxd/sandboxd/store"
)

// Source is what the node reads of the daemon. Calls that take a ctx
// answer as the caller it carries may see: root sees every session and
// template, any other caller their own (and root's templates) alone.
type Source interface {
	// Sessions are the records of the sessions the caller may see.
	Sessions(ctx context.Context) []store.Record
	// Pools are the warm pools, by template name, of the templates the
	// caller may use and that can start a session.
	Pools(ctx context.Context) map[string]api.NodePool
	// Runtimes are the names of the runtimes a session can ask for here.
	Runtimes() []string
	// Volumes are the volumes the caller may see, counted.
	Volumes(ctx context.Context) api.NodeVolumes
	// RequireRoot refuses a caller who is not root; what names the
	// operation.
	RequireRoot(ctx context.Context, what string) error

	// DatabaseWritable says why the database takes no write, nil if it
	// does (a sync: the node reuses its answer for a while).
	DatabaseWritable() error
	// CgroupsWritable says why a sandbox's cgroup cannot be made, nil if
	// it can.
	CgroupsWritable() error
	// PoolsHealth is why warm pools fail to refill, nil if none does;
	// short says each fails for want of disk space alone.
	PoolsHealth() (err error, short bool)
	// DataDirSpace is the data dir's free space, and whether it is below
	// its floor.
	DataDirSpace() (free int64, short bool, err error)
}

// Node is this daemon's node: its id, its host, its drain state and the
// last answer of the database check.
type Node struct {
	cfg  config.Config
	src  Source
	host *Host
	id   string
	log  *slog.Logger
	// draining refuses new sessions (drain.go).
	draining atomic.Bool
	// healthDB is the database check's last answer, made at healthAt.
	healthMu sync.Mutex
	healthDB error
	healthAt time.Time
}

// New is the node of the daemon of cfg and instance on host (nil: this
// host): it reads whether a previous daemon was draining and the node id
// (made and stored if there is none yet).
func New(cfg config.Config, instance string, host *Host, src Source, log *slog.Logger) (*Node, error) {
	if host == nil {
		host = RealHost()
	}
	n := &Node{cfg: cfg, src: src, host: host, log: log}
	n.loadDrain()
	id, err := loadNodeID(cfg.DataDir, instance, host.MachineID)
	if err != nil {
		return nil, err
	}
	n.id = id
	return n, nil
}

// ID is the node's id for schedulers (nodeid.go).
func (n *Node) ID() string { return n.id }

// Node describes this daemon as a scheduler places work on it.
//
// Capacity is the host's: its memory (MemTotal: the daemon has no memory
// budget of its own, and session limits may be overcommitted), the CPUs
// it may run on, and max_sessions. Sessions are seen as GET /v1/info sees
// them: root sees every one, any other caller its own alone, so that
// sessions_by_status and allocated never tell one user of another's work.
// A scheduler asks as root. Templates and pools are those the caller may
// use and that can start a session.
func (n *Node) Node(ctx context.Context) (*api.Node, error) {
	hostname, err := n.host.Hostname()
	if err != nil {
		return nil, err
	}
	memory, err := n.host.memoryMB()
	if err != nil {
		return nil, err
	}
	a := &api.Node{
		NodeID:    n.id,
		Hostname:  hostname,
		Version:   version.Version,
		State:     n.state(),
		Labels:    maps.Clone(n.cfg.Node.Labels),
		Capacity:  api.NodeResources{MemoryMB: memory, CPUs: float64(n.host.CPUs), Sessions: n.cfg.MaxSessions},
		Pools:     n.src.Pools(ctx),
		Templates: []string{},
		Runtimes:  n.src.Runtimes(),
		Volumes:   n.src.Volumes(ctx),
	}
	if a.Labels == nil {
		a.Labels = map[string]string{}
	}
	if a.Pools == nil {
		a.Pools = map[string]api.NodePool{}
	}
	for name := range a.Pools {
		a.Templates = append(a.Templates, name)
	}
	slices.Sort(a.Templates)
	for _, rec := range n.src.Sessions(ctx) {
		// A paused session holds its memory: it is allocated.
		switch st := sess.Status(rec.Status); st {
		case sess.Running, sess.Paused:
			if st == sess.Paused {
				a.SessionsByStatus.Paused++
			} else {
				a.SessionsByStatus.Running++
			}
			a.Allocated.Sessions++
			a.Allocated.MemoryMB += rec.Limits.MemoryMB
			a.Allocated.CPUs += rec.Limits.CPUs
		case sess.Hibernated:
			a.SessionsByStatus.Hibernated++
		case sess.Stopped:
			a.SessionsByStatus.Stopped++
		case sess.Failed:
			a.SessionsByStatus.Failed++
		}
	}
	// Sums of fractions (0.1 + 0.2) print as 0.30000000000000004.
	a.Allocated.CPUs = math.Round(a.Allocated.CPUs*1000) / 1000
	return a, nil
}
