package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/sandboxd/sandboxd/api"
)

// Source is what the scrape reads of the daemon, at each scrape: its
// sessions, warm pools, user-namespace id blocks and networks. The daemon
// implements it (daemon/metricsource.go); each call holds its locks for a
// copy or a read.
type Source interface {
	// SessionsByStatus counts the sessions by status (sandboxd_sessions),
	// every status present.
	SessionsByStatus() map[string]int
	// SessionsByRuntime counts the sessions by runtime and status
	// (sandboxd_sessions_by_runtime), every known runtime and every one
	// of SessionStatuses present.
	SessionsByRuntime() map[RuntimeStatus]int
	// PoolDepths are the warm pools' fills by template label
	// (pool.Templates.Depths).
	PoolDepths() map[string]api.PoolFill
	// IDBlocks are the user-namespace id blocks in use and in the
	// daemon's range; ok is false without user namespaces, for the
	// daemon's life: then there is no series at all, rather than a
	// misleading 0 of 0.
	IDBlocks() (inUse, blocks int, ok bool)
	// DeniedPackets are each networked session's packets its policy
	// refused, by session id.
	DeniedPackets() map[string]uint64
	// SessionExists says a session exists, for the DNS tallies.
	SessionExists(id string) bool
}

// RuntimeStatus is a label pair of sandboxd_sessions_by_runtime.
type RuntimeStatus struct{ Runtime, Status string }

// SessionStatuses are the statuses every runtime's series show, 0 or not.
var SessionStatuses = []string{api.StatusRunning, api.StatusPaused, api.StatusHibernated, api.StatusStopped, api.StatusFailed}

// Watch points the scrape-time series at src, and the sessions' DNS
// tallies at its sessions. Called once, when the daemon is built.
func (m *Metrics) Watch(src Source) {
	m.src.Store(&src)
	m.dnsBySession.watch(src.SessionExists)
	m.reg.MustRegister(poolDepths(src.PoolDepths))
	if _, _, ok := src.IDBlocks(); !ok {
		return
	}
	m.reg.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "sandboxd_userns_id_blocks_in_use", Help: "User-namespace id blocks given to sessions and pooled sandboxes.",
		}, func() float64 { n, _, _ := src.IDBlocks(); return float64(n) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "sandboxd_userns_id_blocks", Help: "User-namespace id blocks of the daemon's range: a create fails when all are in use.",
		}, func() float64 { _, n, _ := src.IDBlocks(); return float64(n) }))
}

// source is what Watch was given; nil before.
func (m *Metrics) source() Source {
	if p := m.src.Load(); p != nil {
		return *p
	}
	return nil
}

// sessionsByRuntime is sandboxd_sessions_by_runtime, computed at scrape
// time from the daemon's sessions (sandboxd_sessions, by status alone,
// stays as it was for the scrapers that read it).
func (m *Metrics) sessionsByRuntime() prometheus.Collector {
	desc := prometheus.NewDesc("sandboxd_sessions_by_runtime", "Sessions by runtime and status.", []string{"runtime", "status"}, nil)
	return collectorFunc{desc: desc, collect: func(ch chan<- prometheus.Metric) {
		src := m.source()
		if src == nil {
			return
		}
		for k, n := range src.SessionsByRuntime() {
			ch <- prometheus.MustNewConstMetric(desc, prometheus.GaugeValue, float64(n), k.Runtime, k.Status)
		}
	}}
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
