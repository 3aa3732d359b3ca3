package server

import (
	"net/http"

	"github.com/sandboxd/sandboxd/api"
)

func (s *Server) listVolumes(w http.ResponseWriter, r *http.Request) error {
	vs, err := s.b.ListVolumes(r.Context())
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, api.VolumeList{Volumes: vs})
	return nil
}

func (s *Server) createVolume(w http.ResponseWriter, r *http.Request) error {
	var req api.CreateVolumeRequest
	if err := s.decode(w, r, &req); err != nil {
		return err
	}
	v, err := s.b.CreateVolume(r.Context(), &req)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, v)
	return nil
}

func (s *Server) getVolume(w http.ResponseWriter, r *http.Request) error {
	v, err := s.b.GetVolume(r.Context(), r.PathValue("name"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, v)
	return nil
}

func (s *Server) deleteVolume(w http.ResponseWriter, r *http.Request) error {
	if err := s.b.DeleteVolume(r.Context(), r.PathValue("name")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
