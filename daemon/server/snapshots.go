package server

import (
	"net/http"

	"github.com/sandboxd/sandboxd/api"
)

func (s *Server) createSnapshot(w http.ResponseWriter, r *http.Request) error {
	var req api.CreateSnapshotRequest
	if err := s.decodeOptional(w, r, &req); err != nil {
		return err
	}
	snap, err := s.b.CreateSnapshot(r.Context(), r.PathValue("id"), &req)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, snap)
	return nil
}

func (s *Server) fork(w http.ResponseWriter, r *http.Request) error {
	var req api.ForkRequest
	if err := s.decodeOptional(w, r, &req); err != nil {
		return err
	}
	ss, err := s.b.Fork(r.Context(), r.PathValue("id"), &req)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, api.SessionList{Sessions: ss})
	return nil
}

func (s *Server) undo(w http.ResponseWriter, r *http.Request) error {
	var req api.UndoRequest
	if err := s.decodeOptional(w, r, &req); err != nil {
		return err
	}
	res, err := s.b.Undo(r.Context(), r.PathValue("id"), &req)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, res)
	return nil
}

func (s *Server) listSnapshots(w http.ResponseWriter, r *http.Request) error {
	ss, err := s.b.ListSnapshots(r.Context())
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, api.SnapshotList{Snapshots: ss})
	return nil
}

func (s *Server) getSnapshot(w http.ResponseWriter, r *http.Request) error {
	snap, err := s.b.GetSnapshot(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, snap)
	return nil
}

func (s *Server) deleteSnapshot(w http.ResponseWriter, r *http.Request) error {
	if err := s.b.DeleteSnapshot(r.Context(), r.PathValue("id")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) exportSnapshot(w http.ResponseWriter, r *http.Request) error {
	write, err := s.b.ExportSnapshot(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "application/x-tar")
	w.WriteHeader(http.StatusOK)
	if err := write(w); err != nil {
		// The status is sent: a cut stream is how the client learns.
		s.log.Warn("export snapshot", "snapshot", r.PathValue("id"), "err", err)
		panic(http.ErrAbortHandler)
	}
	return nil
}

func (s *Server) importSnapshot(w http.ResponseWriter, r *http.Request) error {
	snap, err := s.b.ImportSnapshot(r.Context(), r.URL.Query().Get("name"), r.Body)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, snap)
	return nil
}
