package daemon

import (
	"context"
	"maps"
	"math"
	"slices"

	"github.com/sandboxd/sandboxd/api"
	sess "github.com/sandboxd/sandboxd/daemon/session"
	"github.com/sandboxd/sandboxd/internal/version"
)

// Node describes this daemon as a scheduler places work on it.
//
// Capacity is the host's: its memory (MemTotal: the daemon has no memory
// budget of its own, and session limits may be overcommitted), the CPUs
// it may run on, and max_sessions. Sessions are seen as GET /v1/info sees
// them: root sees every one, any other caller its own alone, so that
// sessions_by_status and allocated never tell one user of another's work.
// A scheduler asks as root. Templates and pools are those the caller may
// use and that can start a session.
func (d *Daemon) Node(ctx context.Context) (*api.Node, error) {
	caller := callerFrom(ctx)
	hostname, err := d.host.hostname()
	if err != nil {
		return nil, err
	}
	memory, err := d.host.memoryMB()
	if err != nil {
		return nil, err
	}
	n := &api.Node{
		NodeID:    d.nodeID,
		Hostname:  hostname,
		Version:   version.Version,
		State:     d.nodeState(),
		Labels:    maps.Clone(d.cfg.Node.Labels),
		Capacity:  api.NodeResources{MemoryMB: memory, CPUs: float64(d.host.cpus), Sessions: d.cfg.MaxSessions},
		Pools:     map[string]api.NodePool{},
		Templates: []string{},
		Runtimes:  d.runtimes.usable(),
	}
	if n.Labels == nil {
		n.Labels = map[string]string{}
	}
	for name, f := range d.tmpl.Fills(ctx, true) {
		n.Pools[name] = api.NodePool{Ready: f.Idle, Target: f.Size}
		n.Templates = append(n.Templates, name)
	}
	slices.Sort(n.Templates)
	for _, s := range d.sessions.all() {
		rec := s.Snapshot()
		if !caller.mayUse(rec.OwnerUID) {
			continue
		}
		// A paused session holds its memory: it is allocated.
		switch st := sess.Status(rec.Status); st {
		case sess.Running, sess.Paused:
			if st == sess.Paused {
				n.SessionsByStatus.Paused++
			} else {
				n.SessionsByStatus.Running++
			}
			n.Allocated.Sessions++
			n.Allocated.MemoryMB += rec.Limits.MemoryMB
			n.Allocated.CPUs += rec.Limits.CPUs
		case sess.Stopped:
			n.SessionsByStatus.Stopped++
		case sess.Failed:
			n.SessionsByStatus.Failed++
		}
	}
	// Sums of fractions (0.1 + 0.2) print as 0.30000000000000004.
	n.Allocated.CPUs = math.Round(n.Allocated.CPUs*1000) / 1000
	return n, nil
}
