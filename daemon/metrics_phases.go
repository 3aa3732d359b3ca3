package daemon

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sandboxd/sandboxd/isolation"
)

// phaseBuckets span half a millisecond to eight seconds: a claim's steps
// take well under a millisecond, a cold start's interpreter tens.
var phaseBuckets = prometheus.ExponentialBuckets(0.0005, 2, 15)

// phases time the steps of creates and sandbox starts, where the time of
// a create goes (docs/performance.md reads them; make bench prints them).
type phases struct {
	// start: a sandbox's start by runtime and step: disk (its image
	// and mount), prepare, container, agent (isolation.Timings), network
	// (its link and policy).
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

// started observes a sandbox's start steps.
func (p phases) started(runtime string, disk, network time.Duration, t isolation.Timings) {
	for _, x := range []struct {
		phase string
		d     time.Duration
	}{{"disk", disk}, {"prepare", t.Prepare}, {"container", t.Container}, {"agent", t.Agent}, {"network", network}} {
		p.start.WithLabelValues(runtime, x.phase).Observe(x.d.Seconds())
	}
}

// stepClock times the steps of one create, one after the other.
type stepClock struct {
	p    phases
	last time.Time
	done []step
}

type step struct {
	phase string
	d     time.Duration
}

func (p phases) clock(from time.Time) *stepClock { return &stepClock{p: p, last: from} }

// lap ends the step phase now.
func (c *stepClock) lap(phase string) {
	t := time.Now()
	c.done = append(c.done, step{phase, t.Sub(c.last)})
	c.last = t
}

// observe records the steps under source, once it is known.
func (c *stepClock) observe(source string) {
	for _, s := range c.done {
		c.p.create.WithLabelValues(source, s.phase).Observe(s.d.Seconds())
	}
}
