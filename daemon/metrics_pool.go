package daemon

import "time"

// countClaim counts a create of a template with a pool: served by it
// (hit) or started cold (miss).
func (m *metrics) countClaim(template string, hit bool) {
	if hit {
		m.poolHits.WithLabelValues(template).Inc()
	} else {
		m.poolMisses.WithLabelValues(template).Inc()
	}
}

// refilled times a pooled sandbox's start, begun at started.
func (m *metrics) refilled(template string, started time.Time) {
	m.poolRefill.WithLabelValues(template).Observe(time.Since(started).Seconds())
}

// forgetTemplate drops the series of a deleted template, so that
// templates that come and go do not pile up series.
func (m *metrics) forgetTemplate(name string) {
	m.poolHits.DeleteLabelValues(name)
	m.poolMisses.DeleteLabelValues(name)
	m.poolRefill.DeleteLabelValues(name)
	m.poolDeaths.DeleteLabelValues(name)
}
