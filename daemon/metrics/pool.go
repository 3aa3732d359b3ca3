package metrics

import "time"

// PoolClaim counts a create of a template with a pool: served by it
// (hit) or started cold (miss).
func (m *Metrics) PoolClaim(template string, hit bool) {
	if hit {
		m.poolHits.WithLabelValues(template).Inc()
	} else {
		m.poolMisses.WithLabelValues(template).Inc()
	}
}

// Refilled times a pooled sandbox's start, begun at started.
func (m *Metrics) Refilled(template string, started time.Time) {
	m.poolRefill.WithLabelValues(template).Observe(time.Since(started).Seconds())
}

// PoolDied counts a pooled sandbox that died or failed a health check
// before a claim.
func (m *Metrics) PoolDied(template string) { m.poolDeaths.WithLabelValues(template).Inc() }

// ForgetTemplate drops the series of a deleted template, so that
// templates that come and go do not pile up series.
func (m *Metrics) ForgetTemplate(name string) {
	m.poolHits.DeleteLabelValues(name)
	m.poolMisses.DeleteLabelValues(name)
	m.poolRefill.DeleteLabelValues(name)
	m.poolDeaths.DeleteLabelValues(name)
}
