package server

import (
	"net/http"
	"net/http/pprof"
	"strings"

	"github.com/containerd/errdefs"

	"github.com/sandboxd/sandboxd/internal/identity"
)

// pprofPath is where Go's profiles are served, to root alone: a heap
// profile shows what the daemon holds, a CPU profile where its time goes
// (docs/performance.md reads them). go tool pprof reads them through the
// socket: curl --unix-socket SOCKET http://d/debug/pprof/heap > heap.pb.gz.
const pprofPath = "/debug/pprof/"

func (s *Server) pprof(w http.ResponseWriter, r *http.Request) error {
	if !identity.From(r.Context()).IsRoot() {
		return errdefs.ErrPermissionDenied.WithMessage("only root may read the daemon's profiles")
	}
	switch strings.TrimPrefix(r.URL.Path, pprofPath) {
	case "cmdline":
		pprof.Cmdline(w, r)
	case "profile":
		pprof.Profile(w, r)
	case "symbol":
		pprof.Symbol(w, r)
	case "trace":
		pprof.Trace(w, r)
	default:
		pprof.Index(w, r) // the list, or a named profile (heap, goroutine, …)
	}
	return nil
}
