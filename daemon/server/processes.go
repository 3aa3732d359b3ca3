package server

import (
	"io"
	"net/http"
	"strconv"

	"github.com/containerd/errdefs"

	"github.com/sandboxd/sandboxd/api"
)

func (s *Server) startProcess(w http.ResponseWriter, r *http.Request) error {
	var req api.ProcessRequest
	if err := s.decode(w, r, &req, "argv"); err != nil {
		return err
	}
	p, err := s.b.StartProcess(r.Context(), r.PathValue("id"), &req)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, p)
	return nil
}

func (s *Server) processes(w http.ResponseWriter, r *http.Request) error {
	ps, err := s.b.Processes(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, api.ProcessList{Processes: ps})
	return nil
}

// pidParam is the path's pid.
func pidParam(r *http.Request) (int, error) {
	v := r.PathValue("pid")
	pid, err := strconv.Atoi(v)
	if err != nil || pid <= 0 {
		return 0, api.Errorf(errdefs.ErrInvalidArgument, "bad pid %s: give a process id, a whole number above 0", api.Quote(v))
	}
	return pid, nil
}

func (s *Server) signalProcess(w http.ResponseWriter, r *http.Request) error {
	pid, err := pidParam(r)
	if err != nil {
		return err
	}
	if err := s.b.SignalProcess(r.Context(), r.PathValue("id"), pid, r.URL.Query().Get("signal")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) processLogs(w http.ResponseWriter, r *http.Request) error {
	pid, err := pidParam(r)
	if err != nil {
		return err
	}
	var offset int64
	if v := r.URL.Query().Get("offset"); v != "" {
		if offset, err = strconv.ParseInt(v, 10, 64); err != nil || offset < 0 {
			return api.Errorf(errdefs.ErrInvalidArgument, "bad offset %s: give a byte offset of 0 or more", api.Quote(v))
		}
	}
	f, running, exit, err := s.b.ProcessLogs(r.Context(), r.PathValue("id"), pid, offset)
	if err != nil {
		return err
	}
	defer f.Close()
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set(api.HeaderProcessRunning, strconv.FormatBool(running))
	if exit != nil {
		w.Header().Set(api.HeaderProcessExitCode, strconv.Itoa(*exit))
	}
	w.WriteHeader(http.StatusOK)
	_, _ = io.Copy(w, f)
	return nil
}
