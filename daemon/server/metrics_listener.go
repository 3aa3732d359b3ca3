package server

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"
)

// ListenMetrics opens metrics_addr, the TCP address where a scraper on
// the host reads the metrics. It is opened before the daemon touches its
// state, as the socket is, so that a taken port fails the start at once.
func ListenMetrics(addr string) (net.Listener, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("metrics_addr %s: %w", addr, err)
	}
	return l, nil
}

// MetricsServer serves GET /metrics, and nothing else, over TCP: no
// caller identity, no API. Whoever reaches the address reads the metrics
// (session ids among their labels), hence loopback or a trusted network.
type MetricsServer struct {
	http *http.Server
}

// NewMetricsServer serves h at GET /metrics (HEAD too); any other path
// answers 404, another method on /metrics 405.
func NewMetricsServer(h http.Handler, log *slog.Logger) *MetricsServer {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", h)
	return &MetricsServer{http: &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second,
		// A scrape is one small request and a few hundred KiB back: a
		// client slower than this is not a scraper.
		ReadTimeout:    30 * time.Second,
		WriteTimeout:   time.Minute,
		IdleTimeout:    2 * time.Minute,
		MaxHeaderBytes: 16 << 10,
		ErrorLog:       slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}}
}

// Serve answers scrapes on l until Shutdown.
func (m *MetricsServer) Serve(l net.Listener) error {
	err := m.http.Serve(l)
	if err == http.ErrServerClosed {
		return nil
	}
	return err
}

// Shutdown stops accepting and waits for the scrapes under way, up to
// ctx; then it closes what is left.
func (m *MetricsServer) Shutdown(ctx context.Context) error {
	err := m.http.Shutdown(ctx)
	if err != nil {
		_ = m.http.Close()
	}
	return err
}
