package server

import (
	"net/http"

	"github.com/sandboxd/sandboxd/api"
)

func (s *Server) listTemplates(w http.ResponseWriter, r *http.Request) error {
	list, err := s.b.Templates(r.Context())
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, api.TemplateList{Templates: list})
	return nil
}

func (s *Server) addTemplate(w http.ResponseWriter, r *http.Request) error {
	var req api.Template
	if err := s.decode(w, r, &req); err != nil {
		return err
	}
	t, err := s.b.AddTemplate(r.Context(), &req)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, t)
	return nil
}

func (s *Server) getTemplate(w http.ResponseWriter, r *http.Request) error {
	t, err := s.b.Template(r.Context(), r.PathValue("name"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, t)
	return nil
}

func (s *Server) deleteTemplate(w http.ResponseWriter, r *http.Request) error {
	if err := s.b.DeleteTemplate(r.Context(), r.PathValue("name")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// importRootfs takes a root filesystem tarball as the raw body; the
// daemon bounds what it unpacks (max_template_mb), not the bytes sent.
func (s *Server) importRootfs(w http.ResponseWriter, r *http.Request) error {
	res, err := s.b.ImportRootfs(r.Context(), r.PathValue("name"), r.Body)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, res)
	return nil
}
