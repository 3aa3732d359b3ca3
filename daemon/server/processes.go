package server

import (
	"context"
	"errors"
	"fmt"
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

// signalProcessPost is POST …/processes/{pid}/signal {signal}: the
// DELETE's signal, with a body.
func (s *Server) signalProcessPost(w http.ResponseWriter, r *http.Request) error {
	pid, err := pidParam(r)
	if err != nil {
		return err
	}
	var req api.SignalRequest
	if err := s.decode(w, r, &req, "signal"); err != nil {
		return err
	}
	if err := s.b.SignalProcess(r.Context(), r.PathValue("id"), pid, req.Signal); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// processStdin is POST …/processes/{pid}/stdin: the raw body goes to an
// attached process's input; ?eof=1 closes it after.
func (s *Server) processStdin(w http.ResponseWriter, r *http.Request) error {
	pid, err := pidParam(r)
	if err != nil {
		return err
	}
	eof, err := boolParam(r, "eof")
	if err != nil {
		return err
	}
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.o.MaxRequestBytes))
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe):
		return api.ErrPayloadTooLarge.WithMessage(fmt.Sprintf("input is sent %d bytes at most a request", s.o.MaxRequestBytes))
	case err != nil:
		return api.Errorf(errdefs.ErrInvalidArgument, "reading the request body: %v", err)
	}
	if err := s.b.WriteStdin(r.Context(), r.PathValue("id"), pid, b, eof); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// resizeProcess is POST …/processes/{pid}/resize {rows, cols}.
func (s *Server) resizeProcess(w http.ResponseWriter, r *http.Request) error {
	pid, err := pidParam(r)
	if err != nil {
		return err
	}
	var size api.TermSize
	if err := s.decode(w, r, &size, "rows", "cols"); err != nil {
		return err
	}
	if err := s.b.ResizeProcess(r.Context(), r.PathValue("id"), pid, size); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// processOutput is GET …/processes/{pid}/output: an attached process's
// output as NDJSON lines from ?from= (start, now, or a byte offset;
// default start), and with ?follow=1 what comes until it ends, its exit
// code the last line.
func (s *Server) processOutput(w http.ResponseWriter, r *http.Request) error {
	pid, err := pidParam(r)
	if err != nil {
		return err
	}
	follow, err := boolParam(r, "follow")
	if err != nil {
		return err
	}
	from := int64(-1)
	switch v := r.URL.Query().Get("from"); v {
	case "", "start":
	case "now":
		from = -2
	default:
		if from, err = strconv.ParseInt(v, 10, 64); err != nil || from < 0 {
			return api.Errorf(errdefs.ErrInvalidArgument, "bad from %s: start, now, or a byte offset", api.Quote(v))
		}
	}
	return s.ndjson(w, r, "the process's streams end with it", func(ctx context.Context, opened func(), send func(any) error) error {
		return s.b.ProcessOutput(ctx, r.PathValue("id"), pid, from, follow, opened, func(o api.ProcessOutput) error { return send(o) })
	})
}

// boolParam is a query parameter that is 1/true or 0/false (absent:
// false).
func boolParam(r *http.Request, name string) (bool, error) {
	switch v := r.URL.Query().Get(name); v {
	case "", "0", "false":
		return false, nil
	case "1", "true":
		return true, nil
	default:
		return false, api.Errorf(errdefs.ErrInvalidArgument, "bad %s %s: give 1 or 0", name, api.Quote(v))
	}
}
