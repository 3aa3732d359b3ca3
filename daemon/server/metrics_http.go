package server

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// httpMetrics count the API's requests, by route and status, and time
// them. Labels come from the router's patterns and a fixed set of
// methods, never from a raw path or id, so the series stay few.
type httpMetrics struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

// routeOther is the route of a request no pattern of the API matched.
const routeOther = "other"

// newHTTPMetrics registers the API's request metrics in reg; a second
// server on the same registry shares the first's.
func newHTTPMetrics(reg prometheus.Registerer) *httpMetrics {
	return &httpMetrics{
		requests: registered(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sandboxd_http_requests_total", Help: "API requests by route (method and pattern; \"other\" for unknown paths) and status code, counted when they end (streams and upgraded connections too).",
		}, []string{"route", "code"})),
		duration: registered(reg, prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "sandboxd_http_request_duration_seconds", Help: "Time from a request's arrival to its handler's end (a stream's or upgraded connection's whole life), by route.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 4, 10),
		}, []string{"route"})),
	}
}

// registered registers c in reg, or returns the one registered already.
func registered[C prometheus.Collector](reg prometheus.Registerer, c C) C {
	err := reg.Register(c)
	var are prometheus.AlreadyRegisteredError
	if errors.As(err, &are) {
		if prev, ok := are.ExistingCollector.(C); ok {
			return prev
		}
	}
	if err != nil {
		panic(err)
	}
	return c
}

// routeNote is where wrap writes the route of the request the router
// matched, for instrument to read at its end.
type routeNote struct{ route string }

type routeNoteKey struct{}

// noteRoute records r's route: its method (one of the standard ones,
// else OTHER) and the pattern the router matched.
func noteRoute(r *http.Request) {
	n, ok := r.Context().Value(routeNoteKey{}).(*routeNote)
	if !ok {
		return
	}
	if r.Pattern == "" || r.Pattern == "/" {
		n.route = routeOther
		return
	}
	n.route = methodLabel(r.Method) + " " + r.Pattern
}

// methodLabel bounds the methods a label can hold: any method reaches the
// port proxy.
func methodLabel(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodOptions, http.MethodConnect, http.MethodTrace:
		return m
	}
	return "OTHER"
}

// instrument counts and times every request once, when its handler
// returns: for a stream or an upgraded connection, at its end. The writer
// it hands on keeps Flush and Hijack working (statusWriter).
func (s *Server) instrument(next http.Handler) http.Handler {
	m := s.httpm
	if m == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		started := time.Now()
		sw := &statusWriter{ResponseWriter: w}
		note := &routeNote{route: routeOther}
		r = r.WithContext(context.WithValue(r.Context(), routeNoteKey{}, note))
		done := false
		defer func() {
			code := sw.status
			if code == 0 {
				// Nothing written: an empty 200, or a handler that panicked
				// past wrap's recover (http.ErrAbortHandler): the caller got
				// no answer.
				code = http.StatusOK
				if !done {
					code = http.StatusInternalServerError
				}
			}
			m.requests.WithLabelValues(note.route, strconv.Itoa(code)).Inc()
			m.duration.WithLabelValues(note.route).Observe(time.Since(started).Seconds())
		}()
		next.ServeHTTP(sw, r)
		done = true
	})
}
