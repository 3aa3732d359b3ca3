package server

import (
	"context"
	"net/http"
	"strconv"

	"github.com/containerd/errdefs"

	"github.com/sandboxd/sandboxd/api"
)

// depthParam is a listing's depth= (0: not given, today's listing).
func depthParam(r *http.Request) (int, error) {
	v := r.URL.Query().Get("depth")
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return 0, api.Errorf(errdefs.ErrInvalidArgument, "bad depth %s: give a whole number of 1 or more", api.Quote(v))
	}
	return n, nil
}

// listDeep answers a listing of depth > 1 (handled true); a depth of 1,
// or none, is getFile's as it always was.
func (s *Server) listDeep(w http.ResponseWriter, r *http.Request, path string) (bool, error) {
	depth, err := depthParam(r)
	if err != nil || depth <= 1 {
		return false, err
	}
	if r.URL.Query().Get("format") != "" {
		return true, errdefs.ErrInvalidArgument.WithMessage("depth lists a folder: it does not go with format")
	}
	list, err := s.b.ListFolder(r.Context(), r.PathValue("id"), path, depth)
	if err != nil {
		return true, err
	}
	writeJSON(w, http.StatusOK, list)
	return true, nil
}

func (s *Server) statFile(w http.ResponseWriter, r *http.Request) error {
	p, err := pathParam(r)
	if err != nil {
		return err
	}
	st, err := s.b.StatFile(r.Context(), r.PathValue("id"), p)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, st)
	return nil
}

func (s *Server) mkdir(w http.ResponseWriter, r *http.Request) error {
	var req api.MkdirRequest
	if err := s.decode(w, r, &req, "path"); err != nil {
		return err
	}
	made, err := s.b.MakeFolder(r.Context(), r.PathValue("id"), req.Path)
	if err != nil {
		return err
	}
	status := http.StatusOK
	if made.Created {
		status = http.StatusCreated
	}
	writeJSON(w, status, made)
	return nil
}

func (s *Server) moveFile(w http.ResponseWriter, r *http.Request) error {
	var req api.FileMoveRequest
	if err := s.decode(w, r, &req, "from", "to"); err != nil {
		return err
	}
	st, err := s.b.MoveFile(r.Context(), r.PathValue("id"), req.From, req.To)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, st)
	return nil
}

// watchFiles streams a folder's changes as NDJSON, one flushed line an
// event, until the caller hangs up, the session's sandbox ends, the folder
// goes, or the daemon shuts down. The 200 goes out once the watch is set,
// so that what changes after the headers arrive is seen.
func (s *Server) watchFiles(w http.ResponseWriter, r *http.Request) error {
	p, err := pathParam(r)
	if err != nil {
		return err
	}
	recursive := false
	switch v := r.URL.Query().Get("recursive"); v {
	case "", "0", "false":
	case "1", "true":
		recursive = true
	default:
		return api.Errorf(errdefs.ErrInvalidArgument, "bad recursive %s: give 1 or 0", api.Quote(v))
	}
	return s.ndjson(w, r, "watch again once it is back", func(ctx context.Context, opened func(), send func(any) error) error {
		return s.b.WatchFiles(ctx, r.PathValue("id"), p, recursive, opened, func(ev api.FileEvent) error { return send(ev) })
	})
}
