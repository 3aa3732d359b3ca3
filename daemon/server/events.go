package server

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/containerd/errdefs"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/internal/logging"
)

// events streams session events as NDJSON, one flushed line each, until
// the caller hangs up, until= passes, or the daemon shuts down. The
// headers go out at once, before any event, so a client knows the stream
// is open and that a quiet stream is only quiet.
func (s *Server) events(w http.ResponseWriter, r *http.Request) error {
	f, err := api.ParseEventFilter(r.URL.Query())
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	defer context.AfterFunc(s.closing, cancel)()

	rc := http.NewResponseController(w)
	w.Header().Set("Content-Type", api.StreamMIME)
	w.WriteHeader(http.StatusOK)
	if err := rc.Flush(); err != nil {
		return nil // the caller is gone already
	}
	enc := json.NewEncoder(w)
	var sendErr error
	send := func(ev *api.SessionEvent) error {
		if sendErr = enc.Encode(ev); sendErr == nil {
			sendErr = rc.Flush()
		}
		return sendErr
	}
	err = s.b.Events(ctx, f, send)
	switch {
	case sendErr != nil, r.Context().Err() != nil:
		// The caller hung up: nobody is left to tell.
	case s.closing.Err() != nil:
		endStream(w, errdefs.ErrUnavailable.WithMessage("sandboxd is shutting down: connect again once it is back"))
	case err != nil:
		// The status is sent already: the failure goes in the stream, as
		// a streamed execution's does.
		if status, _ := api.FromError(err); status >= 500 {
			logging.From(ctx).Error("event stream failed", "err", err)
		}
		endStream(w, err)
	}
	return nil
}

// endStream writes the last line of a stream that failed after its 200.
func endStream(w http.ResponseWriter, err error) {
	_, body := api.FromError(err)
	_ = json.NewEncoder(w).Encode(api.Event{Type: api.EventError, Error: &body.Error})
}
