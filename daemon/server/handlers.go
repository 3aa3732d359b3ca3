package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/containerd/errdefs"

	"github.com/sandboxd/sandboxd/api"
)

func (s *Server) notFound(_ http.ResponseWriter, r *http.Request) error {
	return api.Errorf(errdefs.ErrNotFound, "no such endpoint: %s %s", r.Method, r.URL.Path)
}

// health answers 200 (ok, or degraded: short of disk space), or 503 with
// the reasons when the daemon is unhealthy: the body is the Health, with
// the contract's error in it. (A daemon that
// fails a check still serves what it can: probe liveness with something
// else, or a restart loop follows a full disk.)
func (s *Server) health(w http.ResponseWriter, r *http.Request) error {
	h, err := s.b.Health(r.Context())
	if err != nil {
		return err
	}
	status := http.StatusOK
	if h.Status == api.HealthUnhealthy {
		status = http.StatusServiceUnavailable
		h.Error = &api.ErrorDetail{Code: api.CodeUnavailable, Message: "sandboxd is unhealthy: " + strings.Join(h.Reasons, "; ")}
	}
	writeJSON(w, status, h)
	return nil
}

func (s *Server) info(w http.ResponseWriter, r *http.Request) error {
	info, err := s.b.Info(r.Context())
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, info)
	return nil
}

func (s *Server) node(w http.ResponseWriter, r *http.Request) error {
	n, err := s.b.Node(r.Context())
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, n)
	return nil
}

func (s *Server) drain(w http.ResponseWriter, r *http.Request) error {
	var req api.DrainRequest
	if err := s.decode(w, r, &req, "drain"); err != nil {
		return err
	}
	n, err := s.b.Drain(r.Context(), *req.Drain)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, n)
	return nil
}

// decode reads a JSON body strictly: a bad or unknown field, or trailing
// data, is the caller's mistake and says so. required names fields that
// must be present: a string field cannot tell absent from empty once
// decoded, and "no code" is a mistake while "empty code" is not.
func (s *Server) decode(w http.ResponseWriter, r *http.Request, v any, required ...string) error {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.o.MaxRequestBytes))
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe):
		return api.ErrPayloadTooLarge.WithMessage(fmt.Sprintf("the request body is over the limit of %d bytes", s.o.MaxRequestBytes))
	case err != nil:
		return api.Errorf(errdefs.ErrInvalidArgument, "reading the request body: %v", err)
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		if errors.Is(err, io.EOF) {
			return errdefs.ErrInvalidArgument.WithMessage("the request body is empty: send a JSON object")
		}
		return api.Errorf(errdefs.ErrInvalidArgument, "bad JSON in the request body: %v", err)
	}
	if dec.More() {
		return errdefs.ErrInvalidArgument.WithMessage("bad JSON in the request body: more than one value")
	}
	present, err := checkObject(body)
	if err != nil {
		return err
	}
	return requireFields(present, required)
}

// decodeOptional is decode for a body that may be left out (all its
// fields optional): an empty body is the zero request.
func (s *Server) decodeOptional(w http.ResponseWriter, r *http.Request, v any) error {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.o.MaxRequestBytes))
	if err == nil && len(bytes.TrimSpace(body)) == 0 {
		return nil
	}
	r.Body = io.NopCloser(io.MultiReader(bytes.NewReader(body), errReader{err}))
	return s.decode(w, r, v)
}

// errReader fails with err (nil: io.EOF).
type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) {
	if e.err == nil {
		return 0, io.EOF
	}
	return 0, e.err
}

// requireFields checks that each field of required is among present (the
// body's top-level keys whose value is not null). Names match as
// encoding/json matches them: without regard to case.
func requireFields(present, required []string) error {
	for _, name := range required {
		if !slices.ContainsFunc(present, func(k string) bool { return strings.EqualFold(k, name) }) {
			return api.Errorf(errdefs.ErrInvalidArgument, "%s is required: send it in the JSON body", name)
		}
	}
	return nil
}

func (s *Server) createSession(w http.ResponseWriter, r *http.Request) error {
	var req api.CreateSessionRequest
	if err := s.decode(w, r, &req); err != nil {
		return err
	}
	if req.Count != 0 {
		ss, err := s.b.CreateSessions(r.Context(), &req)
		if err != nil {
			return err
		}
		writeJSON(w, http.StatusCreated, api.SessionList{Sessions: ss})
		return nil
	}
	sess, created, err := s.b.CreateSessionOnce(r.Context(), &req, r.Header.Get(api.HeaderIdempotencyKey))
	if err != nil {
		return err
	}
	status := http.StatusCreated
	if !created {
		status = http.StatusOK // the session an earlier request with the key made
	}
	writeJSON(w, status, sess)
	return nil
}

func (s *Server) setNetwork(w http.ResponseWriter, r *http.Request) error {
	var req api.NetworkRequest
	if err := s.decode(w, r, &req); err != nil {
		return err
	}
	sess, err := s.b.SetNetwork(r.Context(), r.PathValue("id"), &req)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, sess)
	return nil
}

func (s *Server) updateSession(w http.ResponseWriter, r *http.Request) error {
	var req api.UpdateSessionRequest
	if err := s.decode(w, r, &req); err != nil {
		return err
	}
	sess, err := s.b.UpdateSession(r.Context(), r.PathValue("id"), &req)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, sess)
	return nil
}

func (s *Server) listSessions(w http.ResponseWriter, r *http.Request) error {
	labels := map[string]string{}
	for _, l := range r.URL.Query()["label"] {
		k, v, ok := strings.Cut(l, "=")
		if !ok || k == "" {
			return api.Errorf(errdefs.ErrInvalidArgument, "bad label filter %s: write it as key=value", api.Quote(l))
		}
		labels[k] = v
	}
	list, err := s.b.ListSessions(r.Context(), labels)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, api.SessionList{Sessions: list})
	return nil
}

func (s *Server) getSession(w http.ResponseWriter, r *http.Request) error {
	sess, err := s.b.GetSession(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, sess)
	return nil
}

func (s *Server) deleteSession(w http.ResponseWriter, r *http.Request) error {
	if err := s.b.DeleteSession(r.Context(), r.PathValue("id")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) lifecycle(op func(context.Context, string) (*api.Session, error)) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		sess, err := op(r.Context(), r.PathValue("id"))
		if err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, sess)
		return nil
	}
}

func (s *Server) exec(w http.ResponseWriter, r *http.Request) error {
	var req api.ExecRequest
	if err := s.decode(w, r, &req, "code"); err != nil {
		return err
	}
	id := r.PathValue("id")
	if req.Wait != nil && !*req.Wait {
		eid, err := s.b.StartExec(r.Context(), id, &req)
		if err != nil {
			return err
		}
		writeJSON(w, http.StatusAccepted, api.ExecStarted{ID: eid})
		return nil
	}
	return s.answerExecution(w, r, func(on func(api.Event)) (*api.Execution, error) {
		return s.b.Exec(r.Context(), id, &req, on)
	})
}

func (s *Server) execution(w http.ResponseWriter, r *http.Request) error {
	e, err := s.b.Execution(r.Context(), r.PathValue("id"), r.PathValue("eid"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, e)
	return nil
}

func (s *Server) interrupt(w http.ResponseWriter, r *http.Request) error {
	ok, err := s.b.Interrupt(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, api.Interrupted{Interrupted: ok})
	return nil
}

func (s *Server) packages(w http.ResponseWriter, r *http.Request) error {
	var req api.PackagesRequest
	if err := s.decode(w, r, &req, "packages"); err != nil {
		return err
	}
	id := r.PathValue("id")
	return s.answerExecution(w, r, func(on func(api.Event)) (*api.Execution, error) {
		return s.b.InstallPackages(r.Context(), id, &req, on)
	})
}

func (s *Server) run(w http.ResponseWriter, r *http.Request) error {
	var req api.RunRequest
	if err := s.decode(w, r, &req, "code"); err != nil {
		return err
	}
	return s.answerExecution(w, r, func(on func(api.Event)) (*api.Execution, error) {
		return s.b.Run(r.Context(), &req, on)
	})
}

// answerExecution answers with one Execution, or, when the client accepts
// NDJSON, with the output as it comes and the Execution last.
func (s *Server) answerExecution(w http.ResponseWriter, r *http.Request, run func(func(api.Event)) (*api.Execution, error)) error {
	if !strings.Contains(r.Header.Get("Accept"), api.StreamMIME) {
		e, err := run(nil)
		if err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, e)
		return nil
	}
	st := &stream{w: w}
	e, err := run(st.send)
	if err != nil {
		if !st.started {
			return err
		}
		_, body := api.FromError(err)
		st.send(api.Event{Type: api.EventError, Error: &body.Error})
		return nil
	}
	st.send(api.Event{Type: api.EventDone, Execution: e})
	return nil
}

// stream writes NDJSON events, starting the 200 answer at the first one.
type stream struct {
	w       http.ResponseWriter
	started bool
	broken  bool
}

func (st *stream) send(ev api.Event) {
	if st.broken {
		return // the client left; the execution still finishes and is recorded
	}
	if !st.started {
		st.started = true
		st.w.Header().Set("Content-Type", api.StreamMIME)
		st.w.WriteHeader(http.StatusOK)
	}
	b, _ := json.Marshal(ev)
	if _, err := st.w.Write(append(b, '\n')); err != nil {
		st.broken = true
		return
	}
	_ = http.NewResponseController(st.w).Flush()
}

func (s *Server) executions(w http.ResponseWriter, r *http.Request) error {
	limit := 0
	if v := r.URL.Query().Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return api.Errorf(errdefs.ErrInvalidArgument, "bad limit %s: give a whole number of 0 or more", api.Quote(v))
		}
		limit = n
	}
	list, err := s.b.Executions(r.Context(), r.PathValue("id"), limit)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, api.ExecutionList{Executions: list})
	return nil
}

func pathParam(r *http.Request) (string, error) {
	p := r.URL.Query().Get("path")
	if p == "" {
		return "", errdefs.ErrInvalidArgument.WithMessage("the path query parameter is required, e.g. ?path=/workspace/data.csv")
	}
	return p, nil
}

func (s *Server) putFile(w http.ResponseWriter, r *http.Request) error {
	p, err := pathParam(r)
	if err != nil {
		return err
	}
	if r.ContentLength > s.o.MaxUploadBytes {
		return api.ErrPayloadTooLarge.WithMessage(fmt.Sprintf("the upload is %d bytes, over the limit of %d", r.ContentLength, s.o.MaxUploadBytes))
	}
	body := http.MaxBytesReader(w, r.Body, s.o.MaxUploadBytes+1)
	meta := api.MetaFromHeader(r.Header, api.MetaHeaderPrefix)
	put := func(ctx context.Context, id, p string, body io.Reader) (*api.FileWritten, error) {
		return s.b.PutFileMeta(ctx, id, p, body, meta)
	}
	if tarFormat, err := formatParam(r); err != nil {
		return err
	} else if tarFormat {
		if meta != nil {
			return api.Errorf(errdefs.ErrInvalidArgument, "%s headers give one file metadata: a tar upload (format=tar) takes none", api.MetaHeaderPrefix+"*")
		}
		// A tar's headers and padding are not content: the stream may be
		// a little larger than what it unpacks to, which is bounded.
		body = http.MaxBytesReader(w, r.Body, s.o.MaxUploadBytes+s.o.MaxUploadBytes/8+1<<20)
		put = s.b.PutTar
	}
	res, err := put(r.Context(), r.PathValue("id"), p, body)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, res)
	return nil
}

func (s *Server) getFile(w http.ResponseWriter, r *http.Request) error {
	p, err := pathParam(r)
	if err != nil {
		return err
	}
	if deep, err := s.listDeep(w, r, p); deep || err != nil {
		return err
	}
	if tarFormat, err := formatParam(r); err != nil {
		return err
	} else if tarFormat {
		// Errors found before anything was written are answers; after,
		// the stream is cut and the client's tar reader says so.
		tw := &lazyWriter{w: w}
		if err := s.b.GetTar(r.Context(), r.PathValue("id"), p, tw); err != nil && !tw.started {
			return err
		}
		return nil
	}
	f, list, err := s.b.OpenFile(r.Context(), r.PathValue("id"), p)
	if err != nil {
		return err
	}
	return writeFileOrList(w, f, list)
}

// writeFileOrList answers a folder's listing, or else a file's bytes.
func writeFileOrList(w http.ResponseWriter, f *os.File, list *api.FileList) error {
	if list != nil {
		writeJSON(w, http.StatusOK, list)
		return nil
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Length", strconv.FormatInt(fi.Size(), 10))
	w.WriteHeader(http.StatusOK)
	_, _ = io.Copy(w, io.LimitReader(f, fi.Size()))
	return nil
}

func (s *Server) deleteFile(w http.ResponseWriter, r *http.Request) error {
	p, err := pathParam(r)
	if err != nil {
		return err
	}
	if err := s.b.DeleteFile(r.Context(), r.PathValue("id"), p); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) stats(w http.ResponseWriter, r *http.Request) error {
	st, err := s.b.Stats(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, st)
	return nil
}

// formatParam says whether the files call is of a tar stream (format=tar).
func formatParam(r *http.Request) (bool, error) {
	switch v := r.URL.Query().Get("format"); v {
	case "":
		return false, nil
	case "tar":
		return true, nil
	default:
		return false, api.Errorf(errdefs.ErrInvalidArgument, "bad format %s: the only one is tar (a folder as a tar stream)", api.Quote(v))
	}
}

// lazyWriter sends the 200 and its tar type with the first bytes, so that
// an error before them is still an error answer.
type lazyWriter struct {
	w       http.ResponseWriter
	started bool
}

func (l *lazyWriter) Write(p []byte) (int, error) {
	if !l.started {
		l.started = true
		l.w.Header().Set("Content-Type", "application/x-tar")
		l.w.WriteHeader(http.StatusOK)
	}
	return l.w.Write(p)
}
