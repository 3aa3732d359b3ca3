package server

import (
	"net/http"

	"github.com/sandboxd/sandboxd/api"
)

func (s *Server) contexts(w http.ResponseWriter, r *http.Request) error {
	cs, err := s.b.Contexts(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, api.ContextList{Contexts: cs})
	return nil
}

func (s *Server) createContext(w http.ResponseWriter, r *http.Request) error {
	var req api.CreateContextRequest
	if err := s.decode(w, r, &req); err != nil {
		return err
	}
	c, err := s.b.CreateContext(r.Context(), r.PathValue("id"), &req)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, c)
	return nil
}

func (s *Server) deleteContext(w http.ResponseWriter, r *http.Request) error {
	if err := s.b.DeleteContext(r.Context(), r.PathValue("id"), r.PathValue("cid")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) restartContext(w http.ResponseWriter, r *http.Request) error {
	c, err := s.b.RestartContext(r.Context(), r.PathValue("id"), r.PathValue("cid"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, c)
	return nil
}
