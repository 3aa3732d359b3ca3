// Package metrics holds the daemon's Prometheus metrics: the counters the
// daemon bumps as it works (executions, creates, ends, pools, DNS) and the
// series it computes at scrape time from what it reads through a Source.
// It never imports package daemon: the daemon implements Source
// (daemon/metricsource.go) and calls the methods here.
package metrics

import (
	"net/http"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/sandboxd/sandboxd/isolation/netdns"
)

// Metrics are the daemon's Prometheus metrics, in a registry of its own so
// that several daemons (in tests) never share counters.
type Metrics struct {
	reg       *prometheus.Registry
	execs     *prometheus.CounterVec
	execTime  *prometheus.HistogramVec
	creates   *prometheus.CounterVec
	createDur prometheus.Histogram
	denied    *prometheus.CounterVec
	// poolClaims counts creations served from the warm pool; poolDeaths
	// the pooled sandboxes that died before a claim, replaced.
	poolClaims prometheus.Counter
	poolDeaths *prometheus.CounterVec
	// panics counts requests whose handler panicked.
	panics prometheus.Counter
	// historyErrors counts failed writes of execution history.
	historyErrors prometheus.Counter
	// ended counts sessions that stopped or failed, by reason class.
	ended *prometheus.CounterVec
	// src is what the scrape-time series read (Watch); nil until the
	// daemon is built, when they show nothing.
	src atomic.Pointer[Source]
	// No series is per session: /metrics is open to every user of the
	// socket (and to metrics_addr), and session ids would pile up series;
	// a session's own figures are in its stats (GET …/stats), for its
	// owner.
	//
	// dnsRefused counts the DNS queries the daemon refused, by why
	// (netdns.Refusal); dnsBySession keeps each session's count for its
	// stats. The scrape reads each networked session's packets its
	// policy refused (Source.DeniedPackets), which deniedSum adds up into
	// one counter.
	dnsRefused   *prometheus.CounterVec
	dnsBySession dnsTallies
	deniedSum    deniedSum
	// mcpCalls counts calls through the MCP gateway.
	mcpCalls *prometheus.CounterVec
	// poolHits and poolMisses count, by template, the creates of templates
	// with a pool that it served or could not (empty, or no sandbox of it
	// fits the request); poolRefill times the start of a pooled sandbox.
	poolHits   *prometheus.CounterVec
	poolMisses *prometheus.CounterVec
	poolRefill *prometheus.HistogramVec
	// endReasons counts session ends by a fixed class of reason
	// (ends.go), where ended has the event's action alone.
	endReasons *prometheus.CounterVec
	// phases time the steps of creates and starts (phases.go).
	phases phases
}

// New makes the daemon's metrics, in a registry of their own. The
// series read at scrape time show nothing until Watch.
func New() *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		execs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sandboxd_executions_total", Help: "Executions by language and status.",
		}, []string{"language", "status"}),
		execTime: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "sandboxd_execution_duration_seconds", Help: "Time from request to answer of executions.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 4, 10),
		}, []string{"language"}),
		creates: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sandboxd_session_creates_total", Help: "Session creations by result.",
		}, []string{"result"}),
		createDur: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "sandboxd_session_create_duration_seconds", Help: "Time to create a session, ready to execute.",
			Buckets: prometheus.ExponentialBuckets(0.005, 2, 12),
		}),
		poolClaims: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "sandboxd_pool_claims_total", Help: "Session creations served from the warm pool.",
		}),
		poolDeaths: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sandboxd_pool_sandbox_deaths_total", Help: "Pooled sandboxes that died or failed a health check before a claim, and were replaced.",
		}, []string{"template"}),
		panics: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "sandboxd_handler_panics_total", Help: "API requests whose handler panicked (answered 500).",
		}),
		historyErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "sandboxd_history_write_errors_total", Help: "Batches of executions whose history could not be written (the next history read of each session says so).",
		}),
		ended: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sandboxd_session_ends_total", Help: "Sessions that stopped, failed or were lost, by event action.",
		}, []string{"action"}),
		denied: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sandboxd_seccomp_denied_total", Help: "System calls the seccomp filter refused, by name.",
		}, []string{"syscall"}),
		dnsRefused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sandboxd_dns_refused_total", Help: "DNS queries of sessions the daemon refused, by reason: name (its policy does not allow it), type (not forwarded), address (an answer's blocked address, dropped), rate (over the session's rate, REFUSED).",
		}, []string{"reason"}),
		mcpCalls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sandboxd_mcp_calls_total", Help: "Calls of code in sandboxes through the MCP gateway, by server and outcome.",
		}, []string{"server", "outcome"}),
		poolHits: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sandboxd_pool_hits_total", Help: "Creations of a template with a warm pool that the pool served, by template.",
		}, []string{"template"}),
		poolMisses: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sandboxd_pool_misses_total", Help: "Creations of a template with a warm pool that started cold: the pool was empty, or none of its sandboxes fit the request.",
		}, []string{"template"}),
		poolRefill: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "sandboxd_pool_refill_duration_seconds", Help: "Time to start a sandbox for a warm pool, interpreter up and preload done (refill slot held).",
			Buckets: prometheus.ExponentialBuckets(0.025, 2, 12),
		}, []string{"template"}),
		endReasons: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sandboxd_session_end_reasons_total", Help: "Sessions that stopped running, by reason: stopped (by request), idle, lifetime, deadline, shutdown, deleted (while running), oom, lost, failed.",
		}, []string{"reason"}),
	}
	m.phases = newPhases(m.reg)
	for _, r := range endClasses {
		m.endReasons.WithLabelValues(r) // every class from the start, so rate() sees the first
	}
	for _, r := range netdns.Refusals {
		m.dnsRefused.WithLabelValues(string(r))
	}
	m.dnsBySession.init()
	netDenied := prometheus.NewDesc("sandboxd_network_denied_packets_total", "Packets of sessions their network policies refused (connection attempts, mostly), read at scrape time.", nil, nil)
	sessions := prometheus.NewDesc("sandboxd_sessions", "Sessions by status.", []string{"status"}, nil)
	m.reg.MustRegister(m.execs, m.execTime, m.creates, m.createDur, m.denied, m.poolClaims, m.poolDeaths, m.panics, m.historyErrors, m.ended, m.dnsRefused, m.mcpCalls,
		m.poolHits, m.poolMisses, m.poolRefill, m.endReasons, m.sessionsByRuntime(),
		collectorFunc{desc: netDenied, collect: func(ch chan<- prometheus.Metric) {
			src := m.source()
			if src == nil {
				return
			}
			n := m.deniedSum.total(src.DeniedPackets())
			ch <- prometheus.MustNewConstMetric(netDenied, prometheus.CounterValue, float64(n))
		}},
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		collectorFunc{desc: sessions, collect: func(ch chan<- prometheus.Metric) {
			src := m.source()
			if src == nil {
				return
			}
			for st, n := range src.SessionsByStatus() {
				ch <- prometheus.MustNewConstMetric(sessions, prometheus.GaugeValue, float64(n), st)
			}
		}})
	return m
}

// collectorFunc computes a metric at scrape time.
type collectorFunc struct {
	desc    *prometheus.Desc
	collect func(chan<- prometheus.Metric)
}

func (c collectorFunc) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }
func (c collectorFunc) Collect(ch chan<- prometheus.Metric) { c.collect(ch) }

// Handler serves the metrics in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

// Registry is where the server registers its own metrics (the API's
// requests), so that GET /metrics shows them with the daemon's; tests
// read it.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// CountPanic counts a request whose handler panicked (the server's
// OnPanic hook).
func (m *Metrics) CountPanic() { m.panics.Inc() }

// ExecEnded counts an execution that ran, by language and status, and
// times it from request to answer.
func (m *Metrics) ExecEnded(language, status string, took time.Duration) {
	m.execs.WithLabelValues(language, status).Inc()
	m.execTime.WithLabelValues(language).Observe(took.Seconds())
}

// ExecLost counts an execution whose sandbox stopped answering or was
// killed: it has a status but no time of its own.
func (m *Metrics) ExecLost(language, status string) {
	m.execs.WithLabelValues(language, status).Inc()
}

// CreateFailed counts a session's create that failed to start its
// sandbox.
func (m *Metrics) CreateFailed() { m.creates.WithLabelValues("error").Inc() }

// Created counts a session's create that has its sandbox, from the warm
// pool (pooled) or started cold, and times it.
func (m *Metrics) Created(pooled bool, took time.Duration) {
	m.creates.WithLabelValues("ok").Inc()
	if pooled {
		m.poolClaims.Inc()
	}
	m.createDur.Observe(took.Seconds())
}

// MCPCall counts a call through the MCP gateway, by server ("" for a name
// the configuration does not have) and outcome.
func (m *Metrics) MCPCall(server, outcome string) {
	m.mcpCalls.WithLabelValues(server, outcome).Inc()
}

// SeccompDenied counts a system call the seccomp filter refused.
func (m *Metrics) SeccompDenied(syscall string) { m.denied.WithLabelValues(syscall).Inc() }

// HistoryWriteFailed counts a batch of executions whose history could not
// be written.
func (m *Metrics) HistoryWriteFailed() { m.historyErrors.Inc() }
