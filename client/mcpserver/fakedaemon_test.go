package mcpserver

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/client"
)

// pngBytes is the start of a PNG: enough for content sniffing.
var pngBytes = append([]byte("\x89PNG\r\n\x1a\n"), make([]byte, 24)...)

// fakeDaemon answers the calls the server makes, from memory: sessions,
// executions (the code is echoed, "raise" fails, "figure" makes a PNG) and
// files.
type fakeDaemon struct {
	mu       sync.Mutex
	n        int
	sessions map[string]*api.Session
	files    map[string][]byte // id + ":" + path
	execs    []string          // id + ":" + code, in order (id + "/" + context + ":" + code in a context)
	contexts map[string][]api.CodeContext
	attached fakeAttached
	snaps    fakeSnapshots
	undone   map[string]int // id -> executions undone so far
}

func newFakeDaemon(t *testing.T) (*fakeDaemon, *client.Client) {
	f := &fakeDaemon{sessions: map[string]*api.Session{}, files: map[string][]byte{}, contexts: map[string][]api.CodeContext{}}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/sessions", f.create)
	mux.HandleFunc("GET /v1/sessions", f.list)
	mux.HandleFunc("GET /v1/volumes", func(w http.ResponseWriter, _ *http.Request) {
		answer(w, 200, api.VolumeList{Volumes: []api.Volume{{Name: "data", SizeMB: 64, UsedMB: 1, MountedBy: []string{}}}})
	})
	mux.HandleFunc("DELETE /v1/sessions/{id}", f.delete)
	mux.HandleFunc("GET /v1/sessions/{id}", f.get1)
	mux.HandleFunc("POST /v1/sessions/{id}/exec", f.exec)
	mux.HandleFunc("GET /v1/sessions/{id}/executions/{eid}", f.execution)
	mux.HandleFunc("GET /v1/sessions/{id}/executions", f.executions)
	mux.HandleFunc("POST /v1/sessions/{id}/interrupt", f.interrupt)
	mux.HandleFunc("POST /v1/sessions/{id}/processes", f.startProcess)
	mux.HandleFunc("GET /v1/sessions/{id}/processes", f.processes)
	mux.HandleFunc("GET /v1/sessions/{id}/processes/{pid}/logs", f.processLogs)
	mux.HandleFunc("DELETE /v1/sessions/{id}/processes/{pid}", f.signal)
	f.attachedRoutes(mux)
	mux.HandleFunc("POST /v1/sessions/{id}/pause", f.lifecycle(api.StatusPaused))
	mux.HandleFunc("POST /v1/sessions/{id}/resume", f.lifecycle(api.StatusRunning))
	mux.HandleFunc("POST /v1/sessions/{id}/packages", f.exec)
	mux.HandleFunc("PUT /v1/sessions/{id}/files", f.put)
	f.contextRoutes(mux)
	f.snapshotRoutes(mux)
	mux.HandleFunc("POST /v1/sessions/{id}/undo", f.undo)
	mux.HandleFunc("GET /v1/sessions/{id}/files", f.get)
	// On a Unix socket, as the daemon: a short path, for its 107 bytes.
	dir, err := os.MkdirTemp("", "mcpfake-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "s.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(mux)
	srv.Listener = l
	srv.Start()
	t.Cleanup(srv.Close)
	c := client.New(sock)
	t.Cleanup(c.Close)
	return f, c
}

func answer(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

func notFound(w http.ResponseWriter, what string) {
	answer(w, 404, api.ErrorBody{Error: api.ErrorDetail{Code: "not_found", Message: what + " not found"}})
}

func (f *fakeDaemon) session(w http.ResponseWriter, r *http.Request) (string, bool) {
	id := r.PathValue("id")
	f.mu.Lock()
	_, ok := f.sessions[id]
	f.mu.Unlock()
	if !ok {
		notFound(w, "session "+id)
	}
	return id, ok
}

func (f *fakeDaemon) create(w http.ResponseWriter, r *http.Request) {
	var req api.CreateSessionRequest
	_ = json.NewDecoder(r.Body).Decode(&req)
	if req.Snapshot != "" {
		f.createFromSnapshot(w, &req)
		return
	}
	f.mu.Lock()
	f.n++
	s := &api.Session{ID: fmt.Sprintf("s%d", f.n), Template: "python", Status: "running", Network: "none", Labels: req.Labels, CreatedAt: time.Unix(0, 0).UTC()}
	if req.Template != "" {
		s.Template = req.Template
	}
	if req.DeadlineS != nil {
		at := time.Unix(int64(*req.DeadlineS), 0).UTC()
		s.Deadline = &at
	}
	s.Volumes = req.Volumes
	s.Checkpoints = req.Checkpoints
	f.sessions[s.ID] = s
	f.mu.Unlock()
	answer(w, 201, s)
}

func (f *fakeDaemon) list(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := api.SessionList{Sessions: []api.Session{}}
	for _, s := range f.sessions {
		out.Sessions = append(out.Sessions, *s)
	}
	slices.SortFunc(out.Sessions, func(a, b api.Session) int { return strings.Compare(a.ID, b.ID) })
	answer(w, 200, out)
}

func (f *fakeDaemon) get1(w http.ResponseWriter, r *http.Request) {
	if id, ok := f.session(w, r); ok {
		f.mu.Lock()
		s := *f.sessions[id]
		f.mu.Unlock()
		answer(w, 200, s)
	}
}

func (f *fakeDaemon) delete(w http.ResponseWriter, r *http.Request) {
	id, ok := f.session(w, r)
	if !ok {
		return
	}
	f.mu.Lock()
	delete(f.sessions, id)
	f.mu.Unlock()
	w.WriteHeader(204)
}

func (f *fakeDaemon) exec(w http.ResponseWriter, r *http.Request) {
	id, ok := f.session(w, r)
	if !ok {
		return
	}
	var req struct {
		Code     string   `json:"code"`
		Packages []string `json:"packages"`
		Wait     *bool    `json:"wait"`
		Context  string   `json:"context"`
	}
	_ = json.NewDecoder(r.Body).Decode(&req)
	if req.Context != "" && req.Context != api.ContextDefault && f.context(id, req.Context) < 0 {
		notFound(w, "context "+req.Context)
		return
	}
	if req.Wait != nil && !*req.Wait {
		answer(w, http.StatusAccepted, api.ExecStarted{ID: "job-" + req.Code})
		return
	}
	code := req.Code
	if req.Packages != nil {
		code = "pip install " + strings.Join(req.Packages, " ")
	}
	at := id
	if req.Context != "" {
		at += "/" + req.Context
	}
	f.mu.Lock()
	f.execs = append(f.execs, at+":"+code)
	f.mu.Unlock()
	ex := api.Execution{SessionID: id, Status: api.StatusOK, Stdout: code + "\n"}
	switch code {
	case "raise":
		ex.Status, ex.ExitCode, ex.Stdout = api.StatusError, 1, ""
		ex.Error = &api.ExecError{Name: "ValueError", Value: "bad", Traceback: "Traceback: ValueError: bad"}
	case "figure":
		ex.Outputs = []api.Output{{MIME: "image/png", Data: base64.StdEncoding.EncodeToString(pngBytes)}}
	case "display":
		ex.Outputs = []api.Output{
			{MIME: "text/html", Data: base64.StdEncoding.EncodeToString([]byte("<table/>")), Bundle: map[string]string{"text/html": "<table/>", "text/plain": "a table"}},
			{MIME: "image/svg+xml", Data: base64.StdEncoding.EncodeToString([]byte("<svg/>")), Bundle: map[string]string{"image/svg+xml": "<svg/>"}},
		}
	case "6 * 7":
		r := "42"
		ex.Stdout, ex.Result = "", &r
	}
	// The tools stream (a cancelled call interrupts its code): the
	// daemon's NDJSON, the Execution last.
	if strings.Contains(r.Header.Get("Accept"), api.StreamMIME) {
		w.Header().Set("Content-Type", api.StreamMIME)
		_ = json.NewEncoder(w).Encode(api.Event{Type: api.EventDone, Execution: &ex})
		return
	}
	answer(w, 200, ex)
}

// execution: "job-slow" runs on, other jobs ended ok.
func (f *fakeDaemon) execution(w http.ResponseWriter, r *http.Request) {
	id, ok := f.session(w, r)
	if !ok {
		return
	}
	eid := r.PathValue("eid")
	ex := api.Execution{ID: eid, SessionID: id, Status: api.StatusOK, Stdout: "done\n"}
	if eid == "job-slow" {
		ex.Status, ex.Stdout = api.StatusRunning, "half\n"
	}
	answer(w, 200, ex)
}

func (f *fakeDaemon) executions(w http.ResponseWriter, r *http.Request) {
	if _, ok := f.session(w, r); !ok {
		return
	}
	zero := 0
	answer(w, 200, api.ExecutionList{Executions: []api.ExecutionSummary{{ID: "job-slow", Language: "python", Status: api.StatusRunning},
		{ID: "job-1", Language: "shell", Status: api.StatusOK, ExitCode: &zero}}})
}

func (f *fakeDaemon) interrupt(w http.ResponseWriter, r *http.Request) {
	if _, ok := f.session(w, r); !ok {
		return
	}
	answer(w, 200, api.Interrupted{Interrupted: true})
}

// startProcess starts "process" 42, whose log is "line 1\nline 2\n"; it
// has ended with 3 once its log was read to the end.
func (f *fakeDaemon) startProcess(w http.ResponseWriter, r *http.Request) {
	if _, ok := f.session(w, r); !ok {
		return
	}
	var req api.ProcessRequest
	_ = json.NewDecoder(r.Body).Decode(&req)
	if req.Stdin || req.TTY != nil {
		answer(w, 201, f.startAttached(req))
		return
	}
	answer(w, 201, api.Process{PID: 42, Command: strings.Join(req.Argv, " "), Detached: true, Tag: req.Tag})
}

func (f *fakeDaemon) processes(w http.ResponseWriter, r *http.Request) {
	if _, ok := f.session(w, r); !ok {
		return
	}
	answer(w, 200, api.ProcessList{Processes: []api.Process{{PID: 1, Command: "python3 agent"}, {PID: 42, Command: "/bin/sh -c serve", Detached: true, RSSBytes: 3 << 20}}})
}

func (f *fakeDaemon) processLogs(w http.ResponseWriter, r *http.Request) {
	if _, ok := f.session(w, r); !ok {
		return
	}
	if r.PathValue("pid") != "42" {
		notFound(w, "process "+r.PathValue("pid"))
		return
	}
	const log = "line 1\nline 2\n"
	off, _ := strconv.Atoi(r.URL.Query().Get("offset"))
	off = min(off, len(log))
	if off < len(log) {
		w.Header().Set(api.HeaderProcessRunning, "true")
	} else {
		w.Header().Set(api.HeaderProcessExitCode, "3")
	}
	_, _ = io.WriteString(w, log[off:])
}

func (f *fakeDaemon) signal(w http.ResponseWriter, r *http.Request) {
	if _, ok := f.session(w, r); !ok {
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (f *fakeDaemon) lifecycle(status string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		id, ok := f.session(w, r)
		if !ok {
			return
		}
		f.mu.Lock()
		s := *f.sessions[id]
		f.mu.Unlock()
		s.Status = status
		answer(w, 200, s)
	}
}

func (f *fakeDaemon) put(w http.ResponseWriter, r *http.Request) {
	id, ok := f.session(w, r)
	if !ok {
		return
	}
	b, _ := io.ReadAll(r.Body)
	p := r.URL.Query().Get("path")
	f.mu.Lock()
	f.files[id+":"+p] = b
	f.mu.Unlock()
	answer(w, 201, api.FileWritten{Path: "/workspace/" + p, Size: int64(len(b))})
}

func (f *fakeDaemon) get(w http.ResponseWriter, r *http.Request) {
	id, ok := f.session(w, r)
	if !ok {
		return
	}
	p := r.URL.Query().Get("path")
	if p == "." {
		answer(w, 200, api.FileList{Entries: []api.FileInfo{{Name: "a.txt", Type: "file", Size: 3}}})
		return
	}
	f.mu.Lock()
	b, ok := f.files[id+":"+p]
	f.mu.Unlock()
	if !ok {
		notFound(w, "file "+p)
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	_, _ = w.Write(b)
}
