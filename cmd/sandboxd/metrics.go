package main

import (
	"context"
	"log/slog"
	"net"

	"github.com/sandboxd/sandboxd/daemon"
	"github.com/sandboxd/sandboxd/daemon/server"
)

// metricsServer is the metrics_addr listener's server; nil when
// metrics_addr is "".
type metricsServer struct{ *server.MetricsServer }

// serveMetrics serves d's metrics on l (metrics_addr) until shutdown. A
// failure of that listener is logged, not fatal: the API and the
// socket's GET /metrics go on.
func serveMetrics(l net.Listener, d *daemon.Daemon, log *slog.Logger) *metricsServer {
	if l == nil {
		return nil
	}
	m := &metricsServer{server.NewMetricsServer(d.Metrics().Handler(), log)}
	go func() {
		if err := m.Serve(l); err != nil {
			log.Error("metrics_addr stopped serving", "addr", l.Addr().String(), "err", err)
		}
	}()
	log.Info("serving metrics", "addr", l.Addr().String())
	return m
}

// shutdown stops the listener and waits for scrapes under way, up to ctx.
func (m *metricsServer) shutdown(ctx context.Context) error {
	if m == nil {
		return nil
	}
	return m.Shutdown(ctx)
}
