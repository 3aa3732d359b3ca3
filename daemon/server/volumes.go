package server

import (
	"fmt"
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

func (s *Server) updateVolume(w http.ResponseWriter, r *http.Request) error {
	var req api.UpdateVolumeRequest
	if err := s.decode(w, r, &req); err != nil {
		return err
	}
	v, err := s.b.UpdateVolume(r.Context(), r.PathValue("name"), &req)
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

// The files of a volume, without a session: a file or a folder's listing,
// an upload, a removal; paths from the volume's root.

func (s *Server) getVolumeFile(w http.ResponseWriter, r *http.Request) error {
	p, err := pathParam(r)
	if err != nil {
		return err
	}
	f, list, err := s.b.OpenVolumeFile(r.Context(), r.PathValue("name"), p)
	if err != nil {
		return err
	}
	return writeFileOrList(w, f, list)
}

func (s *Server) putVolumeFile(w http.ResponseWriter, r *http.Request) error {
	p, err := pathParam(r)
	if err != nil {
		return err
	}
	if r.ContentLength > s.o.MaxUploadBytes {
		return api.ErrPayloadTooLarge.WithMessage(fmt.Sprintf("the upload is %d bytes, over the limit of %d", r.ContentLength, s.o.MaxUploadBytes))
	}
	res, err := s.b.PutVolumeFile(r.Context(), r.PathValue("name"), p, http.MaxBytesReader(w, r.Body, s.o.MaxUploadBytes+1))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, res)
	return nil
}

func (s *Server) deleteVolumeFile(w http.ResponseWriter, r *http.Request) error {
	p, err := pathParam(r)
	if err != nil {
		return err
	}
	if err := s.b.DeleteVolumeFile(r.Context(), r.PathValue("name"), p); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
