package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// phaseBuckets span half a millisecond to eight seconds: a claim's steps
// take well under a millisecond, a cold start's interpreter tens.
var phaseBuckets = prometheus.ExponentialBuckets(0.0005, 2, 15)

// phases time the steps of creates and sandbox starts, where the time of
// a create goes (docs/performance.md reads them; make bench prints them).
type phases struct {
	// start: a sandbox's start by runtime and step: disk (its image
	// and mount), prepare, container, agent (the runtime's
	// isolation.Timings), network (its link and policy).
	start *prometheus.HistogramVec
	// create: a create's steps by source (pool, cold): admit (checks,
	// quota), wait (for a refill under way, the pool empty), claim (a
	// pooled sandbox taken, checked, given the request's limits) or start
	// (a cold start), record (the durable write).
	create *prometheus.HistogramVec
}

func newPhases(reg *prometheus.Registry) phases {
	p := phases{
		start: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "sandboxd_sandbox_start_phase_seconds", Help: "Time of each step of a sandbox's start (disk, prepare, container, agent, network), by runtime.",
			Buckets: phaseBuckets,
		}, []string{"runtime", "phase"}),
		create: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "sandboxd_session_create_phase_seconds", Help: "Time of each step of a session's create (admit, wait, claim or start, record), by source (pool, cold).",
			Buckets: phaseBuckets,
		}, []string{"source", "phase"}),
	}
	reg.MustRegister(p.start, p.create)
	return p
}

// SandboxStarted observes a sandbox's start steps: its disk, the
// runtime's three (prepare, container, agent: isolation.Timings) and its
// network.
func (m *Metrics) SandboxStarted(runtime string, disk, prepare, container, agent, network time.Duration) {
	for _, x := range []struct {
		phase string
		d     time.Duration
	}{{"disk", disk}, {"prepare", prepare}, {"container", container}, {"agent", agent}, {"network", network}} {
		m.phases.start.WithLabelValues(runtime, x.phase).Observe(x.d.Seconds())
	}
}

// StepClock times the steps of one create, one after the other.
type StepClock struct {
	p    phases
	last time.Time
	done []step
}

type step struct {
	phase string
	d     time.Duration
}

// CreateClock times a create's steps, the first begun at from.
func (m *Metrics) CreateClock(from time.Time) *StepClock {
	return &StepClock{p: m.phases, last: from}
}

// Lap ends the step phase now.
func (c *StepClock) Lap(phase string) {
	t := time.Now()
	c.done = append(c.done, step{phase, t.Sub(c.last)})
	c.last = t
}

// Observe records the steps under source (pool, cold), once it is known.
func (c *StepClock) Observe(source string) {
	for _, s := range c.done {
		c.p.create.WithLabelValues(source, s.phase).Observe(s.d.Seconds())
	}
}
