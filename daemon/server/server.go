package server

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/containerd/errdefs"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/daemon/identity"
	"github.com/sandboxd/sandboxd/internal/logging"
	"github.com/sandboxd/sandboxd/internal/version"
)

// Options configure a Server.
type Options struct {
	// MaxRequestBytes bounds a JSON request body.
	MaxRequestBytes int64
	// MaxUploadBytes bounds a file upload.
	MaxUploadBytes int64
	// Metrics, if set, is served at GET /metrics.
	Metrics http.Handler
}

// Server is the HTTP side of the daemon.
type Server struct {
	b    Backend
	o    Options
	log  *slog.Logger
	http *http.Server
	reqs atomic.Uint64
}

// New makes a server for b.
func New(b Backend, o Options, log *slog.Logger) *Server {
	s := &Server{b: b, o: o, log: log}
	s.http = &http.Server{
		Handler:           s.routes(),
		ConnContext:       connContext,
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	return s
}

// Serve answers requests on l until Shutdown.
func (s *Server) Serve(l net.Listener) error {
	err := s.http.Serve(l)
	if err == http.ErrServerClosed {
		return nil
	}
	return err
}

// Shutdown stops accepting and waits for requests under way, up to ctx.
func (s *Server) Shutdown(ctx context.Context) error { return s.http.Shutdown(ctx) }

// Handler is the server's router with its middleware, for tests.
func (s *Server) Handler() http.Handler { return s.http.Handler }

// handlerFunc is a handler that returns its error instead of writing it.
type handlerFunc func(w http.ResponseWriter, r *http.Request) error

// wrap adds what every request gets: the caller from the socket, a logger,
// the version header, refusal of browser requests, and one place where an
// error becomes an answer.
func (s *Server) wrap(h handlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set(api.VersionHeader, version.Version)
		caller, ok := callerOf(r.Context())
		if !ok {
			writeError(w, r, errdefs.ErrUnavailable.WithMessage("the caller's identity is unknown: connect over the Unix socket"))
			return
		}
		// A browser tricked into talking to the socket (via a proxy) sends
		// these; no legitimate client does.
		if r.Header.Get("Origin") != "" || r.Header.Get("Referer") != "" {
			writeError(w, r, errdefs.ErrInvalidArgument.WithMessage("requests from browsers are refused"))
			return
		}
		log := s.log.With("req", s.reqs.Add(1), "uid", caller.UID)
		ctx := identity.With(r.Context(), caller)
		ctx = logging.With(ctx, log)
		r = r.WithContext(ctx)
		defer func() {
			if p := recover(); p != nil {
				if p == http.ErrAbortHandler {
					panic(p)
				}
				log.Error("panic in handler", "method", r.Method, "path", r.URL.Path, "panic", p)
				writeError(w, r, errdefs.ErrInternal.WithMessage(fmt.Sprintf("internal error: %v", p)))
			}
		}()
		if err := h(w, r); err != nil {
			writeError(w, r, err)
		}
	})
}
