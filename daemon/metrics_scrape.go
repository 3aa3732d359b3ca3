package daemon

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/sandboxd/sandboxd/api"
)

// runtimeStatus is a label pair of sandboxd_sessions_by_runtime.
type runtimeStatus struct{ runtime, status string }

// sessionStatuses are the statuses every runtime's series show, 0 or not.
var sessionStatuses = []string{api.StatusRunning, api.StatusPaused, api.StatusStopped, api.StatusFailed}

// sessionsByRuntime is sandboxd_sessions_by_runtime, computed at scrape
// time from the table (sandboxd_sessions, by status alone, stays as it
// was for the scrapers that read it).
func (m *metrics) sessionsByRuntime() prometheus.Collector {
	desc := prometheus.NewDesc("sandboxd_sessions_by_runtime", "Sessions by runtime and status.", []string{"runtime", "status"}, nil)
	return collectorFunc{desc: desc, collect: func(ch chan<- prometheus.Metric) {
		if m.byRuntime == nil {
			return
		}
		for k, n := range m.byRuntime() {
			ch <- prometheus.MustNewConstMetric(desc, prometheus.GaugeValue, float64(n), k.runtime, k.status)
		}
	}}
}

// watch points the scrape-time metrics at d's state: its sessions and,
// with user namespaces, its id allocator; and the sessions' DNS tallies at
// its table of sessions.
func (m *metrics) watch(d *Daemon) {
	m.byRuntime = d.countByRuntime
	m.dnsBySession.watch(func(id string) bool { _, ok := d.sessions.get(id); return ok })
	m.reg.MustRegister(poolDepths(func() map[string]api.PoolFill { return d.tmpl.Depths() }))
	if d.ids == nil {
		return
	}
	ids := d.ids
	m.reg.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "sandboxd_userns_id_blocks_in_use", Help: "User-namespace id blocks given to sessions and pooled sandboxes.",
		}, func() float64 { return float64(ids.InUse()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "sandboxd_userns_id_blocks", Help: "User-namespace id blocks of the daemon's range: a create fails when all are in use.",
		}, func() float64 { return float64(ids.Range().Blocks) }))
}

// countByRuntime counts the sessions by runtime and status, every known
// runtime and status present. Each lock is held for a copy or a read.
func (d *Daemon) countByRuntime() map[runtimeStatus]int {
	counts := map[runtimeStatus]int{}
	for _, r := range d.runtimes.known {
		for _, st := range sessionStatuses {
			counts[runtimeStatus{r.Name, st}] = 0
		}
	}
	for _, s := range d.sessions.all() {
		rec := s.Snapshot()
		k := runtimeStatus{runtimeOf(rec.Runtime), rec.Status}
		counts[k]++
	}
	return counts
}

// poolDepths is sandboxd_pool_sandboxes: each warm pool's sandboxes by
// state (idle: ready to claim; target: how many it keeps now, raised by
// demand; min: its pool_size), at scrape time, by template label
// (pool.Templates.Depths).
func poolDepths(depths func() map[string]api.PoolFill) prometheus.Collector {
	desc := prometheus.NewDesc("sandboxd_pool_sandboxes", "Warm pools' sandboxes by template and state: idle (ready to claim), target (how many the pool keeps now, raised by recent demand), min (its pool_size).", []string{"template", "state"}, nil)
	return collectorFunc{desc: desc, collect: func(ch chan<- prometheus.Metric) {
		for name, f := range depths() {
			ch <- prometheus.MustNewConstMetric(desc, prometheus.GaugeValue, float64(f.Idle), name, "idle")
			ch <- prometheus.MustNewConstMetric(desc, prometheus.GaugeValue, float64(f.Target), name, "target")
			ch <- prometheus.MustNewConstMetric(desc, prometheus.GaugeValue, float64(f.Size), name, "min")
		}
	}}
}
