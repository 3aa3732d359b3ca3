package daemon

import (
	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/daemon/metrics"
)

// metricSource is what the metrics (package daemon/metrics) read of the
// daemon at each scrape: its sessions, warm pools, id blocks and
// networks. Each lock is held for a copy or a read.
type metricSource struct{ d *Daemon }

var _ metrics.Source = metricSource{}

// SessionsByStatus counts the sessions by status, every status present.
func (s metricSource) SessionsByStatus() map[string]int {
	counts := map[string]int{api.StatusRunning: 0, api.StatusStopped: 0, api.StatusFailed: 0}
	for _, ss := range s.d.sessions.all() {
		st, _ := ss.Status()
		counts[apiStatus(st)]++
	}
	return counts
}

// SessionsByRuntime counts the sessions by runtime and status, every
// known runtime and status present.
func (s metricSource) SessionsByRuntime() map[metrics.RuntimeStatus]int {
	counts := map[metrics.RuntimeStatus]int{}
	for _, r := range s.d.runtimes.known {
		for _, st := range metrics.SessionStatuses {
			counts[metrics.RuntimeStatus{Runtime: r.Name, Status: st}] = 0
		}
	}
	for _, ss := range s.d.sessions.all() {
		rec := ss.Snapshot()
		counts[metrics.RuntimeStatus{Runtime: runtimeOf(rec.Runtime), Status: rec.Status}]++
	}
	return counts
}

func (s metricSource) PoolDepths() map[string]api.PoolFill { return s.d.tmpl.Depths() }

func (s metricSource) IDBlocks() (inUse, blocks int, ok bool) {
	if s.d.launch.ids == nil {
		return 0, 0, false
	}
	return s.d.launch.ids.InUse(), s.d.launch.ids.Range().Blocks, true
}

func (s metricSource) DeniedPackets() map[string]uint64 {
	return s.d.net.deniedCounts(s.d.sessions.all())
}

func (s metricSource) SessionExists(id string) bool {
	_, ok := s.d.sessions.get(id)
	return ok
}

// Metrics are the daemon's metrics: cmd/sandboxd serves them (Handler)
// and hands their registry and panic counter to the server.
func (d *Daemon) Metrics() *metrics.Metrics { return d.metrics }
