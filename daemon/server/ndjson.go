package server

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/containerd/errdefs"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/internal/logging"
)

// ndjson answers a stream of JSON lines, each flushed as it is sent. run
// calls opened once what it streams is set (the 200 goes out then, so
// that what happens after the caller has its headers is not missed), then
// send for each line, until the caller hangs up, run ends, or the daemon
// shuts down (a last error line says so, with afterShutdown's advice). An
// error before opened is the request's, answered as any other.
func (s *Server) ndjson(w http.ResponseWriter, r *http.Request, afterShutdown string, run func(ctx context.Context, opened func(), send func(any) error) error) error {
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	defer context.AfterFunc(s.closing, cancel)()
	rc := http.NewResponseController(w)
	started := false
	opened := func() {
		started = true
		w.Header().Set("Content-Type", api.StreamMIME)
		w.WriteHeader(http.StatusOK)
		_ = rc.Flush()
	}
	enc := json.NewEncoder(w)
	var sendErr error
	send := func(v any) error {
		if sendErr = enc.Encode(v); sendErr == nil {
			sendErr = rc.Flush()
		}
		return sendErr
	}
	err := run(ctx, opened, send)
	switch {
	case !started:
		return err
	case sendErr != nil, r.Context().Err() != nil:
		// The caller hung up: nobody is left to tell.
	case s.closing.Err() != nil:
		endStream(w, errdefs.ErrUnavailable.WithMessage("sandboxd is shutting down: "+afterShutdown))
	case err != nil:
		if status, _ := api.FromError(err); status >= 500 {
			logging.From(ctx).Error("stream failed", "path", r.URL.Path, "err", err)
		}
		endStream(w, err)
	}
	return nil
}
