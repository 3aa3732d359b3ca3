package server

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"runtime/debug"
	"time"

	"github.com/containerd/errdefs"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/internal/identity"
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
	// OnPanic, if set, is called once for every handler that panicked
	// (after the panic is logged), so that panics can be counted.
	OnPanic func()
	// Registerer, if set, takes the server's metrics of the API's
	// requests (metrics_http.go).
	Registerer prometheus.Registerer
}

// Server is the HTTP side of the daemon.
type Server struct {
	b    Backends
	o    Options
	log  *slog.Logger
	http *http.Server
	// httpm counts the requests; nil without Options.Registerer.
	httpm *httpMetrics
	// closing ends with Shutdown. Streams that only end when the caller
	// hangs up (events) watch it, or Shutdown would wait for them until
	// its grace ran out.
	closing    context.Context
	endStreams context.CancelFunc
}

// New makes a server for b, which must serve every area.
func New(b Backends, o Options, log *slog.Logger) *Server {
	if area := b.missing(); area != "" {
		panic("server: no backend serves " + area)
	}
	s := &Server{b: b, o: o, log: log}
	s.closing, s.endStreams = context.WithCancel(context.Background())
	if o.Registerer != nil {
		s.httpm = newHTTPMetrics(o.Registerer)
	}
	s.http = &http.Server{
		Handler:           s.instrument(withRequestID(withVersion(s.routes()))),
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

// Shutdown stops accepting, ends the event streams, and waits for the
// other requests under way, up to ctx.
func (s *Server) Shutdown(ctx context.Context) error {
	s.endStreams()
	return s.http.Shutdown(ctx)
}

// Handler is the server's router with its middleware, for tests.
func (s *Server) Handler() http.Handler { return s.http.Handler }

// handlerFunc is a handler that returns its error instead of writing it.
type handlerFunc func(w http.ResponseWriter, r *http.Request) error

// withVersion puts the daemon's version on every answer.
func withVersion(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set(api.VersionHeader, version.Version)
		next.ServeHTTP(w, r)
	})
}

// wrap adds what every request gets: its route noted for the request
// metrics (instrument, outside the router, counts it), the caller from the
// socket, a logger with the request id, refusal of browser requests, a
// recover that turns a panic into a logged, counted 500, and one place
// where an error becomes an answer.
func (s *Server) wrap(h handlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		noteRoute(r)
		reqID := requestIDOf(r.Context())
		log := s.log.With("req_id", reqID)
		r = r.WithContext(logging.With(r.Context(), log))
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
		log = log.With("uid", caller.UID)
		r = r.WithContext(identity.With(logging.With(r.Context(), log), caller))
		defer func() {
			if p := recover(); p != nil {
				if p == http.ErrAbortHandler {
					panic(p)
				}
				// The answer says where to look, never what Go said: a
				// panic's text and stack are for the log, not the caller.
				log.Error("panic in handler", "method", r.Method, "path", r.URL.Path, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
				if s.o.OnPanic != nil {
					s.o.OnPanic()
				}
				writeError(w, r, api.Errorf(errdefs.ErrInternal, "internal error: the daemon logged the details under request id %s", reqID))
			}
		}()
		if err := h(w, r); err != nil {
			writeError(w, r, err)
		}
	})
}
